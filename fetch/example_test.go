package fetch_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"

	"github.com/shimkit/shimkit/fetch"
)

// A shim released as a bare binary on a web server, pinned by digest.
func ExampleHTTPFetcher() {
	shim := []byte("\x7fELF...a shim binary...")
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write(shim) }))
	defer srv.Close()

	dest, _ := os.MkdirTemp("", "shim")
	defer os.RemoveAll(dest)
	f := fetch.NewHTTPFetcher(srv.URL+"/containerd-shim-demo-v2",
		"6e8c7d8e0ee8c9cd2a70b06d8db6c5fdd1bc3cce0e6a1c2e07a08f6eb7c6c7c2", fetch.Options{})
	_, err := f.Fetch(context.Background(), fetch.HostPlatform(), dest)
	fmt.Println(err != nil && errors.Is(err, fetch.ErrDigestMismatch))

	f = fetch.NewHTTPFetcher(srv.URL+"/containerd-shim-demo-v2", "", fetch.Options{})
	res, err := f.Fetch(context.Background(), fetch.HostPlatform(), dest)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(res.Executables)
	// Output:
	// true
	// [containerd-shim-demo-v2]
}

// A controller pins an HTTP artifact before any node fetches it: one
// download through sha256, nothing stored. Every node then fetches with
// that digest and refuses anything else, even if the file at the URL
// changes in between.
func ExampleHTTPFetcher_Digest() {
	shim := []byte("\x7fELF...a shim binary...")
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write(shim) }))
	defer srv.Close()

	f := fetch.NewHTTPFetcher(srv.URL+"/containerd-shim-demo-v2", "", fetch.Options{})
	d, size, err := f.Digest(context.Background(), fetch.HostPlatform())
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(d, size)

	node := fetch.NewHTTPFetcher(srv.URL+"/containerd-shim-demo-v2", d.Encoded(), fetch.Options{})
	_ = node // node.Fetch(ctx, fetch.HostPlatform(), "/opt/shimkit/staging/demo")
	// Output: sha256:bb3af5a31266d5d633209c55f00f8405e4a9d4855af8a9b2dd010b9407ed5549 23
}

// Plain HTTP is for registries on the node or in the cluster.
func ExampleLocalRegistry() {
	for _, host := range []string{"localhost:5000", "[::1]:5000", "registry.kube-system.svc:5000", "10.0.0.5:5000", "registry.example.com"} {
		fmt.Println(host, fetch.LocalRegistry(host))
	}
	// Output:
	// localhost:5000 true
	// [::1]:5000 true
	// registry.kube-system.svc:5000 true
	// 10.0.0.5:5000 false
	// registry.example.com false
}

// A shim artifact in an OCI registry, for the node's platform, with the
// credentials of a Kubernetes pull secret.
func ExampleOCIFetcher() {
	pullSecret := []byte(`{"auths":{"registry.example:5000":{"username":"puller","password":"s3cret"}}}`)
	f := &fetch.OCIFetcher{
		Reference:        "registry.example:5000/shims/spin:v0.19.0",
		DockerConfigJSON: pullSecret,
		Options:          fetch.Options{Progress: func(done, total int64) { fmt.Printf("\r%d/%d bytes", done, total) }},
	}
	_ = f // f.Fetch(ctx, fetch.HostPlatform(), "/opt/shimkit/staging/spin")
	fmt.Println(f.Reference)
	// Output: registry.example:5000/shims/spin:v0.19.0
}

// An air-gapped node: the artifact was copied next to the installer.
func ExampleLocalFetcher() {
	dir, _ := os.MkdirTemp("", "airgap")
	defer os.RemoveAll(dir)
	bin := filepath.Join(dir, "containerd-shim-demo-v2")
	_ = os.WriteFile(bin, []byte("\x7fELF..."), 0o644)

	res, err := (&fetch.LocalFetcher{Path: bin}).Fetch(context.Background(), fetch.HostPlatform(), filepath.Join(dir, "out"))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(res.Executables, res.Size)
	// Output: [containerd-shim-demo-v2] 7
}

// A shim from the files of an image the kubelet mounted into the pod (an
// image volume): checked like an archive, recorded under the image's
// digest.
func ExampleDirFetcher() {
	image, _ := os.MkdirTemp("", "image")
	defer os.RemoveAll(image)
	_ = os.MkdirAll(filepath.Join(image, "bin"), 0o755)
	_ = os.WriteFile(filepath.Join(image, "bin", "containerd-shim-demo-v2"), []byte("\x7fELF..."), 0o644)
	_ = os.WriteFile(filepath.Join(image, "demo.toml"), []byte("level = 1\n"), 0o644)

	dest, _ := os.MkdirTemp("", "shim")
	defer os.RemoveAll(dest)
	f := &fetch.DirFetcher{Path: image, Digest: "sha256:e867888aa3db37207abbdc5324ba94ee217f00b24a4c1b70abc82d916dbce52a"}
	res, err := f.Fetch(context.Background(), fetch.HostPlatform(), dest)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(res.Files, res.Executables)
	// Output: [bin/containerd-shim-demo-v2 demo.toml] [bin/containerd-shim-demo-v2]
}
