package installer_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/shimkit/shimkit/containerdconfig"
	"github.com/shimkit/shimkit/fetch"
	"github.com/shimkit/shimkit/installer"
)

// Bake a shim into an image's root filesystem: offline, no restart.
func ExampleInstaller_Install_offline() {
	root, _ := os.MkdirTemp("", "image-root")
	defer os.RemoveAll(root)
	_ = os.MkdirAll(filepath.Join(root, "etc/containerd"), 0o755)
	_ = os.WriteFile(filepath.Join(root, "etc/containerd/config.toml"), []byte("version = 2\n"), 0o644)
	shim := filepath.Join(root, "containerd-shim-wasm-v2") // an artifact copied in beforehand
	_ = os.WriteFile(shim, []byte("\x7fELF..."), 0o644)

	inst := &installer.Installer{HostRoot: root, Offline: true}
	res, err := inst.Install(context.Background(), installer.Spec{
		Handler: containerdconfig.RuntimeHandler{Name: "wasm", RuntimeType: "io.containerd.wasm.v2"},
		Fetcher: &fetch.LocalFetcher{Path: shim},
		Source:  "file://containerd-shim-wasm-v2",
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(res.Changed, res.Restarted, res.Binaries)
	// Output: true false [/opt/shimkit/bin/containerd-shim-wasm-v2]
}
