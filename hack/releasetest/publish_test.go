package releasetest

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/shimkit/shimkit/internal/testutil"
)

// TestPublish makes a release named under a registry (for this machine's
// platform: the test release has the others), publishes it there with make
// publish, and installs nothing but reads back what a user's
// helm and container runtime get: the chart from its OCI repository, with
// the images pinned to the digests the registry serves.
func TestPublish(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a release; run without -short")
	}
	reg := testutil.StartRegistry(t, "", "")
	prefix := reg.Host + "/shimkit/"
	dist := nativeRelease(t, "IMAGE_PREFIX="+prefix)
	out, err := makeTarget(t, 2*time.Minute, "publish", "VERSION="+version, "DIST="+dist, "IMAGE_PREFIX="+prefix, "PLAIN_HTTP=1")
	if err != nil {
		t.Fatalf("make publish: %v\n%s", err, out)
	}
	images, err := os.ReadFile(filepath.Join(dist, "images.txt"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Fields(string(images))
	if len(lines) != 2 {
		t.Fatalf("images.txt: %q", images)
	}
	ctx := context.Background()
	for _, line := range lines {
		repoTag, digest, _ := strings.Cut(strings.TrimPrefix(line, reg.Host+"/"), "@")
		repo, tag, _ := strings.Cut(repoTag, ":")
		if got, err := reg.Repository(t, repo).Resolve(ctx, tag); err != nil || got.Digest.String() != digest {
			t.Errorf("%s:%s in the registry: %v %v, want %s", repo, tag, got.Digest, err, digest)
		}
	}
	chart := "oci://" + reg.Host + "/shimkit/charts/shimkit"
	if show := helm(t, "show", "chart", chart, "--version", chartVersion, "--plain-http"); !strings.Contains(show, "\nversion: "+chartVersion+"\n") {
		t.Errorf("helm show chart %s: %s", chart, show)
	}
	checkRenderedImages(t, chart, lines[0], lines[1], "--version", chartVersion, "--plain-http")

	// A release named under no registry cannot be published.
	if out, err := makeTarget(t, time.Minute, "publish", "VERSION="+version, "DIST="+dist); err == nil || !strings.Contains(string(out), "IMAGE_PREFIX=registry.example/shimkit/ is required") {
		t.Errorf("make publish without IMAGE_PREFIX: %v\n%s", err, out)
	}
}
