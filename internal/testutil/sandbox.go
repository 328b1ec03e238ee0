package testutil

import (
	"archive/tar"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// PauseImageRef is the sandbox image of the test configs.
const PauseImageRef = "shimkit.test/pause:1"

// PauseImageTar builds the pause binary of internal/testutil/pause and
// packs it as an image tarball named PauseImageRef, into dir.
func PauseImageTar(t testing.TB, dir string) string {
	t.Helper()
	bin := GoBuild(t, "./internal/testutil/pause", filepath.Join(dir, "pause"), "-trimpath", "-ldflags", "-s -w")
	data, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	var layerTar bytes.Buffer
	tw := tar.NewWriter(&layerTar)
	if err := tw.WriteHeader(&tar.Header{Name: "pause", Mode: 0o755, Size: int64(len(data)), Typeflag: tar.TypeReg}); err != nil {
		t.Fatal(err)
	}
	_, _ = tw.Write(data)
	_ = tw.Close()
	out := filepath.Join(dir, "pause.tar")
	writeImage(t, layerTar.Bytes(), PauseImageRef, v1.Config{Entrypoint: []string{"/pause"}}, out)
	return out
}

// ImportPause imports the pause image into the k8s.io namespace of c, so
// that pod sandboxes start without pulling anything.
func (c *Containerd) ImportPause(t testing.TB) { ImportPause(t, c.Build.Binary("ctr"), c.Socket) }

// ImportPause imports the pause image with the ctr binary into the
// containerd listening on socket.
func ImportPause(t testing.TB, ctr, socket string) {
	t.Helper()
	ImportImage(t, ctr, socket, PauseImageTar(t, t.TempDir()))
}

// ImportImage imports an image archive with the ctr binary into the k8s.io
// namespace of the containerd listening on socket.
func ImportImage(t testing.TB, ctr, socket, tarPath string) {
	t.Helper()
	out, err := exec.Command(ctr, "--address", socket, "-n", "k8s.io", "images", "import", tarPath).CombinedOutput()
	if err != nil {
		t.Fatalf("ctr images import %s: %v\n%s", tarPath, err, out)
	}
}

// RunSandbox starts a host-network pod sandbox with the runtime handler
// and returns its id and the path of the shim binary running it.
func RunSandbox(ctx context.Context, rt runtimeapi.RuntimeServiceClient, handler, name string) (string, string, error) {
	resp, err := rt.RunPodSandbox(ctx, &runtimeapi.RunPodSandboxRequest{
		RuntimeHandler: handler,
		Config: &runtimeapi.PodSandboxConfig{
			Metadata: &runtimeapi.PodSandboxMetadata{Name: name, Namespace: "default", Uid: name + "-uid"},
			Linux: &runtimeapi.LinuxPodSandboxConfig{SecurityContext: &runtimeapi.LinuxSandboxSecurityContext{
				NamespaceOptions: &runtimeapi.NamespaceOption{Network: runtimeapi.NamespaceMode_NODE},
			}},
		},
	})
	if err != nil {
		return "", "", fmt.Errorf("RunPodSandbox with handler %s: %w", handler, err)
	}
	id := resp.PodSandboxId
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		if exe, ok := ShimOf(id); ok {
			return id, exe, nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	return id, "", fmt.Errorf("sandbox %s runs, but no shim process mentions it", id)
}
