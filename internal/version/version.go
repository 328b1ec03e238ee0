package version

import (
	"fmt"
	"runtime"
	"runtime/debug"
)

// version is set with -ldflags -X by make release and make image; it is
// the package's only variable, written by the linker alone.
var version string

// Version is the binary's version: the one stamped at link time, else the
// main module's as the go command recorded it, else "(devel)".
func Version() string {
	bi, ok := debug.ReadBuildInfo()
	return resolve(version, bi, ok)
}

// resolve picks the version from what was stamped and the build info.
func resolve(stamped string, bi *debug.BuildInfo, ok bool) string {
	if stamped != "" {
		return stamped
	}
	if ok && bi != nil && bi.Main.Version != "" {
		return bi.Main.Version
	}
	return "(devel)"
}

// String is the line a binary's --version prints: its name, the version,
// the Go version and the platform, e.g.
// "shimkit-operator v1.2.3 (go1.26.8 linux/amd64)".
func String(binary string) string {
	return fmt.Sprintf("%s %s (%s %s/%s)", binary, Version(), runtime.Version(), runtime.GOOS, runtime.GOARCH)
}
