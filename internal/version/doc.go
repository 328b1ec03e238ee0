// Package version is the version of shimkit's binaries (shimkit-operator
// --version, shimkit-installer --version).
//
// A release stamps it at link time (make release VERSION=v1.2.3, make
// image):
//
//	go build -ldflags "-X github.com/shimkit/shimkit/internal/version.version=v1.2.3" ./cmd/...
//
// Unstamped, it is the main module's version that the go command recorded
// in the binary: the tag of `go install github.com/shimkit/shimkit/cmd/...@v1.2.3`,
// or a pseudo-version from the work tree's commit (with +dirty for local
// changes) when built here; "(devel)" when the go command knew neither.
package version
