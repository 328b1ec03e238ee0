package imagebuild_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2/content"

	"github.com/shimkit/shimkit/fetch"
	"github.com/shimkit/shimkit/internal/imagebuild"
	"github.com/shimkit/shimkit/internal/testutil"
)

// twoArchIndex writes an index of two members whose "binaries" are text
// files, and returns the archive and its digest.
func twoArchIndex(t *testing.T, dir, ref string) (string, string) {
	t.Helper()
	var imgs []imagebuild.Image
	for _, arch := range []string{"amd64", "arm64"} {
		bin := filepath.Join(dir, "prog-"+arch)
		if err := os.WriteFile(bin, []byte("#!/bin/sh\necho "+arch+"\n"), 0o755); err != nil {
			t.Fatal(err)
		}
		imgs = append(imgs, imagebuild.Image{Binary: bin, Name: "prog", Arch: arch, User: "65532"})
	}
	out := filepath.Join(dir, "prog.oci.tar")
	digest, err := imagebuild.WriteIndex(imagebuild.Index{Ref: ref, Images: imgs}, out)
	if err != nil {
		t.Fatal(err)
	}
	return out, digest.String()
}

// The archive is an OCI image layout whose index.json names one image
// index by tag and reference, with a member per platform; the same inputs
// give the same bytes.
func TestWriteIndex(t *testing.T) {
	dir := t.TempDir()
	archive, digest := twoArchIndex(t, dir, "registry.example/shimkit/prog:v1")
	top := readIndexJSON(t, archive)
	if len(top.Manifests) != 1 {
		t.Fatalf("index.json: %d manifests, want 1", len(top.Manifests))
	}
	d := top.Manifests[0]
	if d.MediaType != ocispec.MediaTypeImageIndex || d.Digest.String() != digest ||
		d.Annotations[imagebuild.AnnotationRefName] != "v1" || d.Annotations[imagebuild.AnnotationImageName] != "registry.example/shimkit/prog:v1" {
		t.Errorf("index.json names %+v; want an image index %s tagged v1 as registry.example/shimkit/prog:v1", d, digest)
	}
	var idx ocispec.Index
	if err := json.Unmarshal(blob(t, archive, d.Digest.Encoded()), &idx); err != nil {
		t.Fatal(err)
	}
	var platforms []string
	for _, m := range idx.Manifests {
		platforms = append(platforms, m.Platform.OS+"/"+m.Platform.Architecture)
		var man ocispec.Manifest
		if err := json.Unmarshal(blob(t, archive, m.Digest.Encoded()), &man); err != nil {
			t.Fatal(err)
		}
		var cfg ocispec.Image
		if err := json.Unmarshal(blob(t, archive, man.Config.Digest.Encoded()), &cfg); err != nil {
			t.Fatal(err)
		}
		if m.MediaType != ocispec.MediaTypeImageManifest || man.Config.MediaType != ocispec.MediaTypeImageConfig ||
			len(man.Layers) != 1 || man.Layers[0].MediaType != ocispec.MediaTypeImageLayerGzip ||
			cfg.Architecture != m.Platform.Architecture || cfg.OS != "linux" || cfg.Config.User != "65532" {
			t.Errorf("member %s: %s, config %s, layers %v, config says %s/%s user %q", m.Platform.Architecture, m.MediaType, man.Config.MediaType, man.Layers, cfg.OS, cfg.Architecture, cfg.Config.User)
		}
	}
	if !slices.Equal(platforms, []string{"linux/amd64", "linux/arm64"}) {
		t.Errorf("platforms %q, want linux/amd64 and linux/arm64", platforms)
	}
	first, _ := os.ReadFile(archive)
	again, digest2 := twoArchIndex(t, t.TempDir(), "registry.example/shimkit/prog:v1")
	second, _ := os.ReadFile(again)
	if digest2 != digest || !bytes.Equal(first, second) {
		t.Errorf("built twice: %s then %s, archives equal %v; want the same", digest, digest2, bytes.Equal(first, second))
	}
}

func TestWriteIndexRefusals(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "prog")
	if err := os.WriteFile(bin, []byte("x"), 0o755); err != nil {
		t.Fatal(err)
	}
	for name, ix := range map[string]imagebuild.Index{
		"no images":      {Ref: "prog:v1"},
		"no arch":        {Ref: "prog:v1", Images: []imagebuild.Image{{Binary: bin, Name: "prog"}}},
		"arch twice":     {Ref: "prog:v1", Images: []imagebuild.Image{{Binary: bin, Name: "prog", Arch: "amd64"}, {Binary: bin, Name: "prog", Arch: "amd64"}}},
		"bad reference":  {Ref: "Prog:v1:x", Images: []imagebuild.Image{{Binary: bin, Name: "prog", Arch: "amd64"}}},
		"missing binary": {Ref: "prog:v1", Images: []imagebuild.Image{{Binary: bin + ".gone", Name: "prog", Arch: "amd64"}}},
	} {
		out := filepath.Join(dir, strings.ReplaceAll(name, " ", "-")+".tar")
		if _, err := imagebuild.WriteIndex(ix, out); err == nil {
			t.Errorf("%s: no error", name)
		}
		if _, err := os.Stat(out); err == nil {
			t.Errorf("%s: %s written", name, out)
		}
	}
}

// Push copies the index and both members to the registry under the name
// the archive gives it; the registry then serves the same digest.
func TestPush(t *testing.T) {
	reg := testutil.StartRegistry(t, "", "")
	archive, digest := twoArchIndex(t, t.TempDir(), reg.Host+"/shimkit/prog:v1")
	ctx := context.Background()
	desc, err := imagebuild.Push(ctx, archive, "", fetch.RegistryOptions{PlainHTTP: true})
	if err != nil {
		t.Fatal(err)
	}
	if desc.Digest.String() != digest {
		t.Errorf("pushed %s, want %s", desc.Digest, digest)
	}
	repo := reg.Repository(t, "shimkit/prog")
	got, err := repo.Resolve(ctx, "v1")
	if err != nil || got.Digest.String() != digest {
		t.Fatalf("the registry's v1: %v %v, want %s", got.Digest, err, digest)
	}
	data, err := content.FetchAll(ctx, repo, got)
	if err != nil {
		t.Fatal(err)
	}
	var idx ocispec.Index
	if err := json.Unmarshal(data, &idx); err != nil {
		t.Fatal(err)
	}
	for _, m := range idx.Manifests {
		if _, err := content.FetchAll(ctx, repo, m); err != nil {
			t.Errorf("member %s: %v", m.Platform.Architecture, err)
		}
	}
	// Under another name: the tag of the reference given.
	if _, err := imagebuild.Push(ctx, archive, reg.Host+"/mirror/prog:stable", fetch.RegistryOptions{PlainHTTP: true}); err != nil {
		t.Fatal(err)
	}
	if got, err := reg.Repository(t, "mirror/prog").Resolve(ctx, "stable"); err != nil || got.Digest.String() != digest {
		t.Errorf("mirror/prog:stable: %v %v, want %s", got.Digest, err, digest)
	}
}

// TestIndexRunsInContainerd imports an index archive of two platforms into
// a real containerd, which runs the member of its own platform: the
// installer, built for this machine. The other member is the tests' pause
// program built for the other architecture, so a wrong pick fails to
// start; the release's own cross-built installer is checked once, by
// hack/releasetest's TestCrossRelease (compiling the installer's graph for
// a second architecture here cost this package 235 s of a cold run).
func TestIndexRunsInContainerd(t *testing.T) {
	b := testutil.ContainerdMatrix(t)[2]
	dir := t.TempDir()
	native, other := runtime.GOARCH, "arm64"
	if native == other {
		other = "amd64"
	}
	installer := testutil.GoBuild(t, "./cmd/shimkit-installer", filepath.Join(dir, "shimkit-installer-"+native))
	pause := testutil.GoBuildArch(t, other, "./internal/testutil/pause", filepath.Join(dir, "pause-"+other))
	imgs := []imagebuild.Image{
		{Binary: installer, Name: "shimkit-installer", Arch: native},
		{Binary: pause, Name: "shimkit-installer", Arch: other},
	}
	ref := "shimkit.test/shimkit-installer:index"
	archive := filepath.Join(dir, "installer.oci.tar")
	if _, err := imagebuild.WriteIndex(imagebuild.Index{Ref: ref, Images: imgs}, archive); err != nil {
		t.Fatal(err)
	}
	c := testutil.StartContainerd(t, b, b.MinimalConfig())
	ctr := func(args ...string) (string, error) {
		out, err := exec.Command(b.Binary("ctr"), append([]string{"--address", c.Socket}, args...)...).CombinedOutput()
		return string(out), err
	}
	if out, err := ctr("images", "import", archive); err != nil {
		t.Fatalf("import: %v\n%s", err, out)
	}
	out, err := ctr("run", "--rm", ref, "index-test", "/shimkit-installer", "status", "--host-root", "/")
	if err != nil || !strings.Contains(out, "null") {
		t.Errorf("status in the container (the %s member): %v\n%s", native, err, out)
	}
}

// A bare name is named as containerd and the kubelet pull it.
func TestWriteIndexNamesBareReferences(t *testing.T) {
	archive, _ := twoArchIndex(t, t.TempDir(), "prog:v1")
	if got := readIndexJSON(t, archive).Manifests[0].Annotations[imagebuild.AnnotationImageName]; got != "docker.io/library/prog:v1" {
		t.Errorf("prog:v1 is named %q, want docker.io/library/prog:v1", got)
	}
}
