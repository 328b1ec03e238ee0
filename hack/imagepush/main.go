// Command imagepush copies an image index of make release (an OCI image
// layout archive) to a registry, every platform with it, and prints the
// digest pushed; see internal/imagebuild.Push.
//
//	imagepush dist/shimkit-operator-v0.1.0.oci.tar                      # to the name the release gave it
//	imagepush dist/shimkit-operator-v0.1.0.oci.tar registry.example/mirror/shimkit-operator:v0.1.0
//
// Credentials come from the Docker config ($DOCKER_CONFIG/config.json, else
// ~/.docker/config.json: docker login, helm registry login and oras login
// write it). -plain-http talks HTTP to a loopback or cluster-local
// registry; -insecure allows it to any.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"os/signal"
	"path/filepath"

	"github.com/shimkit/shimkit/fetch"
	"github.com/shimkit/shimkit/internal/imagebuild"
)

func main() {
	var o fetch.RegistryOptions
	flag.BoolVar(&o.PlainHTTP, "plain-http", false, "talk HTTP, not HTTPS (a loopback or cluster-local registry)")
	flag.BoolVar(&o.Insecure, "insecure", false, "allow -plain-http to any registry")
	flag.Usage = func() {
		fmt.Fprintln(flag.CommandLine.Output(), "usage: imagepush [-plain-http [-insecure]] ARCHIVE [REFERENCE]")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() < 1 || flag.NArg() > 2 {
		flag.Usage()
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	cfg, err := dockerConfig()
	if err != nil {
		fmt.Fprintln(os.Stderr, "imagepush:", err)
		os.Exit(1)
	}
	o.DockerConfigJSON = cfg
	desc, err := imagebuild.Push(ctx, flag.Arg(0), flag.Arg(1), o)
	if err != nil {
		fmt.Fprintln(os.Stderr, "imagepush:", err)
		os.Exit(1)
	}
	fmt.Println(desc.Digest)
}

// dockerConfig reads the Docker config, nil when there is none.
func dockerConfig() ([]byte, error) {
	dir := os.Getenv("DOCKER_CONFIG")
	if dir == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return nil, nil
		}
		dir = filepath.Join(home, ".docker")
	}
	data, err := os.ReadFile(filepath.Join(dir, "config.json"))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	return data, err
}
