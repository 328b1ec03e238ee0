package imagebuild

import (
	"context"
	"fmt"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2"
	"oras.land/oras-go/v2/content/oci"

	"github.com/shimkit/shimkit/fetch"
)

// Push copies the image index of an OCI image layout archive (WriteIndex)
// with every manifest, config and layer under it to ref in a registry (""
// is the name the archive gives it, AnnotationImageName), and returns the
// descriptor pushed: its digest is the archive's. Blobs the registry has
// are not sent again.
func Push(ctx context.Context, archive, ref string, o fetch.RegistryOptions) (ocispec.Descriptor, error) {
	src, err := oci.NewFromTar(ctx, archive)
	if err != nil {
		return ocispec.Descriptor{}, fmt.Errorf("%s: %w", archive, err)
	}
	tag, name, err := archiveName(ctx, src)
	if err != nil {
		return ocispec.Descriptor{}, fmt.Errorf("%s: %w", archive, err)
	}
	if ref == "" {
		ref = name
	}
	repo, dst, err := fetch.NewRepository(ref, o)
	if err != nil {
		return ocispec.Descriptor{}, err
	}
	dstTag := dst.Reference
	if dstTag == "" {
		dstTag = tag
	}
	desc, err := oras.Copy(ctx, src, tag, repo, dstTag, oras.DefaultCopyOptions)
	if err != nil {
		return ocispec.Descriptor{}, fmt.Errorf("push %s to %s: %w", archive, ref, err)
	}
	return desc, nil
}

// archiveName returns the tag and the reference of the one image index an
// archive of WriteIndex names.
func archiveName(ctx context.Context, src *oci.ReadOnlyStore) (tag, ref string, err error) {
	var found []string
	if err := src.Tags(ctx, "", func(tags []string) error { found = append(found, tags...); return nil }); err != nil {
		return "", "", err
	}
	if len(found) != 1 {
		return "", "", fmt.Errorf("want one tagged image index, found tags %q", found)
	}
	desc, err := src.Resolve(ctx, found[0])
	if err != nil {
		return "", "", err
	}
	name := desc.Annotations[AnnotationImageName]
	if name == "" {
		return "", "", fmt.Errorf("tag %s: no %s annotation", found[0], AnnotationImageName)
	}
	return found[0], name, nil
}
