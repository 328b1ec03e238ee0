package imagebuild

import (
	"archive/tar"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// Annotations of the layout's index.json naming the image index: the tag
// (OCI) and the whole reference (containerd's import, nerdctl, kind).
const (
	AnnotationRefName   = "org.opencontainers.image.ref.name"
	AnnotationImageName = "io.containerd.image.name"
)

// Index describes a multi-platform image: the same program built for each
// architecture.
type Index struct {
	// Ref names the image index, e.g. registry.example/shimkit-operator:v0.1.0.
	Ref string
	// Images are its members, one per Arch (linux), each with its own Binary.
	Images []Image
}

// WriteIndex builds each member image and an OCI image index of them, and
// writes it to out as an OCI image layout archive (a tar of oci-layout,
// index.json and blobs/) whose index.json names the index by Ref. It
// returns the index's digest, which a pull of Ref resolves to once the
// archive is pushed (Push).
func WriteIndex(ix Index, out string) (v1.Hash, error) {
	tag, err := name.NewTag(ix.Ref)
	if err != nil {
		return v1.Hash{}, fmt.Errorf("image name %q: %w", ix.Ref, err)
	}
	if len(ix.Images) == 0 {
		return v1.Hash{}, fmt.Errorf("image index %s: no images", ix.Ref)
	}
	var idx v1.ImageIndex = mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	seen := map[string]bool{}
	for _, img := range ix.Images {
		if img.Arch == "" || seen[img.Arch] {
			return v1.Hash{}, fmt.Errorf("image index %s: member %s: want one image per architecture, each naming it (Arch %q)", ix.Ref, img.Binary, img.Arch)
		}
		seen[img.Arch] = true
		image, err := build(img, true)
		if err != nil {
			return v1.Hash{}, fmt.Errorf("image index %s: %s: %w", ix.Ref, img.Arch, err)
		}
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{Add: image, Descriptor: v1.Descriptor{
			Platform: &v1.Platform{OS: "linux", Architecture: img.Arch},
		}})
	}
	digest, err := idx.Digest()
	if err != nil {
		return v1.Hash{}, err
	}
	dir, err := os.MkdirTemp("", "imagebuild-")
	if err != nil {
		return v1.Hash{}, err
	}
	defer os.RemoveAll(dir)
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		return v1.Hash{}, err
	}
	if err := p.AppendIndex(idx, layout.WithAnnotations(map[string]string{
		AnnotationRefName: tag.TagStr(), AnnotationImageName: fullName(tag),
	})); err != nil {
		return v1.Hash{}, fmt.Errorf("image index %s: %w", ix.Ref, err)
	}
	if err := tarDir(dir, out); err != nil {
		return v1.Hash{}, fmt.Errorf("image index %s: %w", ix.Ref, err)
	}
	return digest, nil
}

// fullName is the reference as containerd and the kubelet name it:
// docker.io/library/NAME:TAG for a bare NAME:TAG.
func fullName(tag name.Tag) string {
	registry := tag.RegistryStr()
	if registry == name.DefaultRegistry {
		registry = "docker.io"
	}
	return registry + "/" + tag.RepositoryStr() + ":" + tag.TagStr()
}

// tarDir writes the files under dir to the tar archive out, in a fixed
// order, with fixed owners and times: the same layout, the same archive.
func tarDir(dir, out string) error {
	var paths []string
	if err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err == nil && path != dir {
			paths = append(paths, path)
		}
		return err
	}); err != nil {
		return err
	}
	slices.Sort(paths)
	f, err := os.Create(out)
	if err != nil {
		return err
	}
	tw := tar.NewWriter(f)
	for _, path := range paths {
		if err := addFile(tw, dir, path); err != nil {
			f.Close()
			return err
		}
	}
	if err := tw.Close(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func addFile(tw *tar.Writer, dir, path string) error {
	fi, err := os.Stat(path)
	if err != nil {
		return err
	}
	rel, err := filepath.Rel(dir, path)
	if err != nil {
		return err
	}
	h := &tar.Header{Name: filepath.ToSlash(rel), Mode: 0o644, ModTime: time.Unix(0, 0), Format: tar.FormatPAX}
	if fi.IsDir() {
		h.Typeflag, h.Name, h.Mode = tar.TypeDir, h.Name+"/", 0o755
		return tw.WriteHeader(h)
	}
	h.Typeflag, h.Size = tar.TypeReg, fi.Size()
	if err := tw.WriteHeader(h); err != nil {
		return err
	}
	src, err := os.Open(path)
	if err != nil {
		return err
	}
	defer src.Close()
	_, err = io.Copy(tw, src)
	return err
}
