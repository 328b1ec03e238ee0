package testutil

import (
	"bytes"
	"io"
	"runtime"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// writeImage writes a one-layer image of this machine's platform, named
// ref, with config, as an image tarball at out.
func writeImage(t testing.TB, layerTar []byte, ref string, config v1.Config, out string) {
	t.Helper()
	img := oneLayerImage(t, layerTar, config)
	tag, err := name.NewTag(ref)
	if err != nil {
		t.Fatal(err)
	}
	if err := tarball.WriteToFile(out, tag, img); err != nil {
		t.Fatal(err)
	}
}

// oneLayerImage is an image of this machine's platform, FROM scratch,
// with layerTar as its one layer and config.
func oneLayerImage(t testing.TB, layerTar []byte, config v1.Config) v1.Image {
	t.Helper()
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(layerTar)), nil })
	if err != nil {
		t.Fatal(err)
	}
	img, err := mutate.AppendLayers(empty.Image, layer)
	if err != nil {
		t.Fatal(err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture = "linux", runtime.GOARCH
	cf.Config = config
	if img, err = mutate.ConfigFile(img, cf); err != nil {
		t.Fatal(err)
	}
	return img
}
