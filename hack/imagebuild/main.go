// Command imagebuild writes the reference images (make images) without a
// Docker engine; see internal/imagebuild.
//
//	imagebuild -binary bin/shimkit-installer -name shimkit-installer -ref shimkit-installer:dev -out bin/shimkit-installer.tar
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/shimkit/shimkit/internal/imagebuild"
)

func main() {
	var img imagebuild.Image
	flag.StringVar(&img.Binary, "binary", "", "static binary to put in the image")
	flag.StringVar(&img.Name, "name", "", "its name in the image (/<name> is the entrypoint)")
	flag.StringVar(&img.Ref, "ref", "", "image reference, name:tag")
	flag.StringVar(&img.User, "user", "", "numeric user to run as (default root)")
	out := flag.String("out", "", "tarball to write")
	flag.Parse()
	if img.Binary == "" || img.Name == "" || img.Ref == "" || *out == "" {
		flag.Usage()
		os.Exit(2)
	}
	if err := imagebuild.Write(img, *out); err != nil {
		fmt.Fprintln(os.Stderr, "imagebuild:", err)
		os.Exit(1)
	}
}
