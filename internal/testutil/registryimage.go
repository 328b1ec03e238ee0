package testutil

import (
	"archive/tar"
	"bytes"
	"context"
	"io"
	"maps"
	"slices"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2/content"
)

// PushImage pushes a container image for linux on this machine's
// architecture, FROM scratch with files (path in the image → content; a
// name containing "containerd-shim-" is executable) in one layer, as
// repoName:tag, and returns its manifest digest.
func (r *Registry) PushImage(t testing.TB, repoName, tag string, files map[string][]byte) string {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, p := range slices.Sorted(maps.Keys(files)) {
		mode := int64(0o644)
		if bytes.Contains([]byte(p), []byte("containerd-shim-")) {
			mode = 0o755
		}
		if err := tw.WriteHeader(&tar.Header{Name: p, Typeflag: tar.TypeReg, Mode: mode, Size: int64(len(files[p])), ModTime: time.Unix(0, 0)}); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write(files[p]); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return r.pushImage(t, repoName, tag, oneLayerImage(t, buf.Bytes(), v1.Config{}))
}

// pushImage pushes img as repoName:tag and returns its manifest digest.
func (r *Registry) pushImage(t testing.TB, repoName, tag string, img v1.Image) string {
	t.Helper()
	// Its blobs and manifest, pushed as they are (oras-go, with the
	// registry's credentials).
	ctx := context.Background()
	repo := r.Repository(t, repoName)
	push := func(mediaType string, data []byte) ocispec.Descriptor {
		desc := content.NewDescriptorFromBytes(mediaType, data)
		if err := repo.Push(ctx, desc, bytes.NewReader(data)); err != nil {
			t.Fatalf("push %s to %s/%s: %v", desc.Digest, r.Host, repoName, err)
		}
		return desc
	}
	layers, err := img.Layers()
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range layers {
		rc, err := l.Compressed()
		if err != nil {
			t.Fatal(err)
		}
		blob, err := io.ReadAll(rc)
		rc.Close()
		if err != nil {
			t.Fatal(err)
		}
		mt, err := l.MediaType()
		if err != nil {
			t.Fatal(err)
		}
		push(string(mt), blob)
	}
	rawConfig, err := img.RawConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	push(ocispec.MediaTypeImageConfig, rawConfig)
	rawManifest, err := img.RawManifest()
	if err != nil {
		t.Fatal(err)
	}
	mt, err := img.MediaType()
	if err != nil {
		t.Fatal(err)
	}
	desc := push(string(mt), rawManifest)
	if err := repo.Tag(ctx, desc, tag); err != nil {
		t.Fatalf("tag %s/%s:%s: %v", r.Host, repoName, tag, err)
	}
	d, err := img.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return d.String()
}
