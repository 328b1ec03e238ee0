// Package imagebuild makes the reference container images without a Docker
// engine: a static binary (and the build host's CA bundle, for HTTPS) in a
// single layer. Write makes one image for one platform, as an image tarball
// that `ctr images import`, `docker load` and `kind load image-archive` all
// read; WriteIndex makes a multi-platform image index, as an OCI image
// layout archive (index.go), and Push copies such an archive to a registry
// (push.go). The same inputs always give the same digests.
package imagebuild

import (
	"archive/tar"
	"bytes"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// caBundle is where Debian keeps the CA certificates.
const caBundle = "/etc/ssl/certs/ca-certificates.crt"

// Image describes one image.
type Image struct {
	// Ref names the image, e.g. shimkit-installer:v0.1.0.
	Ref string
	// Binary is the static binary on this machine; it becomes /<Name>.
	Binary string
	Name   string
	// Args are the default arguments after the entrypoint.
	Args []string
	// User is the numeric user to run as; empty runs as root.
	User string
	// Arch defaults to this machine's.
	Arch string
	// License is the SPDX expression of the image's license (label
	// org.opencontainers.image.licenses; "": none), and Legal the files
	// that go with it (LICENSE, NOTICE), each put in /licenses under its
	// base name.
	License string
	Legal   []string
}

// Write builds the image and writes it as a tarball to out.
func Write(img Image, out string) error {
	image, err := build(img, false)
	if err != nil {
		return err
	}
	tag, err := name.NewTag(img.Ref)
	if err != nil {
		return fmt.Errorf("image name %q: %w", img.Ref, err)
	}
	return tarball.WriteToFile(out, tag, image)
}

// build makes the image of img: with oci, of OCI media types (an image
// index's member), else of Docker's (what docker load reads).
func build(img Image, oci bool) (v1.Image, error) {
	bin, err := os.ReadFile(img.Binary)
	if err != nil {
		return nil, err
	}
	files := map[string]fileEntry{"/" + img.Name: {data: bin, mode: 0o755}}
	if ca, err := os.ReadFile(caBundle); err == nil {
		files[caBundle] = fileEntry{data: ca, mode: 0o644}
	}
	for _, f := range img.Legal {
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		files["/licenses/"+filepath.Base(f)] = fileEntry{data: data, mode: 0o644}
	}
	files["/tmp/"] = fileEntry{mode: 0o1777} // a directory: programs expect a /tmp
	layerTar, err := tarOf(files)
	if err != nil {
		return nil, err
	}
	var layerOpts []tarball.LayerOption
	base := empty.Image
	if oci {
		layerOpts = append(layerOpts, tarball.WithMediaType(types.OCILayer))
		base = mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), types.OCIConfigJSON)
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(layerTar)), nil }, layerOpts...)
	if err != nil {
		return nil, err
	}
	image, err := mutate.AppendLayers(base, layer)
	if err != nil {
		return nil, err
	}
	cf, err := image.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	arch := img.Arch
	if arch == "" {
		arch = runtime.GOARCH
	}
	cf.OS, cf.Architecture = "linux", arch
	cf.Created = v1.Time{Time: time.Unix(0, 0).UTC()} // reproducible
	labels := map[string]string{"org.opencontainers.image.source": "https://github.com/shimkit/shimkit"}
	if img.License != "" {
		labels["org.opencontainers.image.licenses"] = img.License
	}
	cf.Config = v1.Config{Entrypoint: []string{"/" + img.Name}, Cmd: img.Args, User: img.User,
		Env: []string{"SSL_CERT_FILE=" + caBundle}, Labels: labels}
	return mutate.ConfigFile(image, cf)
}

type fileEntry struct {
	data []byte
	mode int64
}

func tarOf(files map[string]fileEntry) ([]byte, error) {
	var b bytes.Buffer
	tw := tar.NewWriter(&b)
	dirs := map[string]bool{}
	for _, p := range slices.Sorted(maps.Keys(files)) {
		f := files[p]
		if strings.HasSuffix(p, "/") {
			if err := tw.WriteHeader(&tar.Header{Name: p[1:], Typeflag: tar.TypeDir, Mode: f.mode, ModTime: time.Unix(0, 0)}); err != nil {
				return nil, err
			}
			continue
		}
		for d := dirOf(p); d != "" && !dirs[d]; d = dirOf(d) {
			dirs[d] = true
			if err := tw.WriteHeader(&tar.Header{Name: d[1:] + "/", Typeflag: tar.TypeDir, Mode: 0o755, ModTime: time.Unix(0, 0)}); err != nil {
				return nil, err
			}
		}
		if err := tw.WriteHeader(&tar.Header{Name: p[1:], Typeflag: tar.TypeReg, Mode: f.mode, Size: int64(len(f.data)), ModTime: time.Unix(0, 0)}); err != nil {
			return nil, err
		}
		if _, err := tw.Write(f.data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// dirOf returns the parent of an absolute path, or "" for the root.
func dirOf(p string) string {
	for i := len(p) - 1; i > 0; i-- {
		if p[i] == '/' {
			return p[:i]
		}
	}
	return ""
}
