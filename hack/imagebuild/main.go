// Command imagebuild writes the reference images (make images, make
// release) without a Docker engine; see internal/imagebuild.
//
// One image, for this machine's architecture, as an image tarball:
//
//	imagebuild -binary bin/shimkit-installer -name shimkit-installer -ref shimkit-installer:dev -out bin/shimkit-installer.tar \
//	  -license Apache-2.0 -legal LICENSE -legal NOTICE
//
// A multi-platform image index, as an OCI image layout archive; it prints
// the index's digest:
//
//	imagebuild -platform linux/amd64=dist/amd64/shimkit-installer -platform linux/arm64=dist/arm64/shimkit-installer \
//	  -name shimkit-installer -ref registry.example/shimkit-installer:v0.1.0 -out dist/shimkit-installer-v0.1.0.oci.tar
package main

import (
	"flag"
	"fmt"
	"os"
	"strings"

	"github.com/shimkit/shimkit/internal/imagebuild"
)

// files collects repeated file flags.
type files []string

func (f *files) String() string     { return strings.Join(*f, ",") }
func (f *files) Set(v string) error { *f = append(*f, v); return nil }

// platforms collects -platform linux/ARCH=BINARY flags.
type platforms []imagebuild.Image

func (p *platforms) String() string { return fmt.Sprint(len(*p)) }

func (p *platforms) Set(v string) error {
	platform, bin, ok := strings.Cut(v, "=")
	arch, found := strings.CutPrefix(platform, "linux/")
	if !ok || !found || arch == "" || bin == "" {
		return fmt.Errorf("%q: want linux/ARCH=BINARY", v)
	}
	*p = append(*p, imagebuild.Image{Arch: arch, Binary: bin})
	return nil
}

func main() {
	var img imagebuild.Image
	var members platforms
	flag.StringVar(&img.Binary, "binary", "", "static binary to put in the image (one image, this machine's architecture)")
	flag.Var(&members, "platform", "linux/ARCH=BINARY, repeated: a member of a multi-platform image index")
	flag.StringVar(&img.Name, "name", "", "its name in the image (/<name> is the entrypoint)")
	flag.StringVar(&img.Ref, "ref", "", "image reference, name:tag")
	flag.StringVar(&img.User, "user", "", "numeric user to run as (default root)")
	flag.StringVar(&img.License, "license", "", "SPDX expression of the image's license (label org.opencontainers.image.licenses)")
	flag.Var((*files)(&img.Legal), "legal", "a license or notice file put in /licenses, repeated")
	out := flag.String("out", "", "tarball (-binary) or OCI image layout archive (-platform) to write")
	flag.Parse()
	if (img.Binary == "") == (len(members) == 0) || img.Name == "" || img.Ref == "" || *out == "" {
		fmt.Fprintln(os.Stderr, "imagebuild: want -name, -ref, -out and either -binary or -platform")
		flag.Usage()
		os.Exit(2)
	}
	if err := build(img, members, *out); err != nil {
		fmt.Fprintln(os.Stderr, "imagebuild:", err)
		os.Exit(1)
	}
}

func build(img imagebuild.Image, members platforms, out string) error {
	if len(members) == 0 {
		return imagebuild.Write(img, out)
	}
	ix := imagebuild.Index{Ref: img.Ref}
	for _, m := range members {
		m.Name, m.User, m.License, m.Legal = img.Name, img.User, img.License, img.Legal
		ix.Images = append(ix.Images, m)
	}
	digest, err := imagebuild.WriteIndex(ix, out)
	if err != nil {
		return err
	}
	fmt.Println(digest)
	return nil
}
