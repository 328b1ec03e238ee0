package containerdconfig_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/shimkit/shimkit/containerdconfig"
)

// Register a handler in a config held in memory: the rest of the file is
// kept byte for byte, and removing the handler gives the original back.
func ExampleAddHandler() {
	orig := []byte("version = 2\n\n# my settings\n[plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes.runc]\n  runtime_type = \"io.containerd.runc.v2\"\n")
	h := containerdconfig.RuntimeHandler{
		Name:        "spin",
		RuntimeType: "io.containerd.spin.v2",
		RuntimePath: "/opt/shimkit/bin/containerd-shim-spin-v2",
	}
	out, changed, err := containerdconfig.AddHandler("config.toml", orig, h)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("changed: %v\n%s", changed, out[len(orig):])

	back, _, err := containerdconfig.RemoveHandler("config.toml", out, "spin")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("restored:", string(back) == string(orig))
	// Output:
	// changed: true
	//
	// # >>> shimkit: runtime handler "spin" (managed by shimkit; do not edit) >>>
	// [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.spin]
	//   runtime_type = "io.containerd.spin.v2"
	//   runtime_path = "/opt/shimkit/bin/containerd-shim-spin-v2"
	// # <<< shimkit: runtime handler "spin" <<<
	// restored: true
}

// Take over a handler the admin wrote: AddHandler refuses it, AdoptHandler
// replaces it with a block that keeps the admin's text, and removing the
// handler puts that text back byte for byte.
func ExampleAdoptHandler() {
	orig := []byte("version = 2\n\n[plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes.spin]\n  runtime_type = \"io.containerd.spin.v2\"\n")
	h := containerdconfig.RuntimeHandler{
		Name:        "spin",
		RuntimeType: "io.containerd.spin.v2",
		RuntimePath: "/opt/shimkit/bin/containerd-shim-spin-v2",
	}
	_, _, err := containerdconfig.AddHandler("config.toml", orig, h)
	fmt.Println("refused:", errors.Is(err, containerdconfig.ErrConflict))

	out, changed, err := containerdconfig.AdoptHandler("config.toml", orig, h)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("changed: %v\n%s", changed, out)

	back, _, err := containerdconfig.RemoveHandler("config.toml", out, "spin")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("restored:", string(back) == string(orig))
	// Output:
	// refused: true
	// changed: true
	// version = 2
	//
	// # >>> shimkit: runtime handler "spin" (adopted by shimkit; the #| lines keep the original; do not edit) >>>
	// #| [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.spin]
	// #|   runtime_type = "io.containerd.spin.v2"
	// [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.spin]
	//   runtime_type = "io.containerd.spin.v2"
	//   runtime_path = "/opt/shimkit/bin/containerd-shim-spin-v2"
	// # <<< shimkit: runtime handler "spin" <<<
	// restored: true
}

// Install a handler on a node's root filesystem, with the distribution
// detected, and roll the change back (as the installer does when containerd
// does not come back healthy).
func ExampleNewInstall() {
	root, err := os.MkdirTemp("", "node-root")
	if err != nil {
		log.Fatal(err)
	}
	cfg := filepath.Join(root, "etc/containerd/config.toml")
	_ = os.MkdirAll(filepath.Dir(cfg), 0o755)
	_ = os.WriteFile(cfg, []byte("version = 3\nimports = [\"/etc/containerd/conf.d/*.toml\"]\n"), 0o644)

	preset, err := containerdconfig.Detect(root)
	if err != nil {
		log.Fatal(err)
	}
	target := containerdconfig.Target{Root: root, Preset: preset}
	change, err := containerdconfig.NewInstall(target, containerdconfig.RuntimeHandler{
		Name:        "kata",
		RuntimeType: "io.containerd.kata.v2",
		Options:     map[string]any{"ConfigPath": "/opt/kata/share/defaults/kata-containers/configuration.toml"},
	}).Apply(context.Background())
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("preset:", preset.Name, "restart:", preset.Units[0])
	fmt.Println("wrote:", change.Files())
	if err := change.Rollback(); err != nil {
		log.Fatal(err)
	}
	_, err = os.Stat(filepath.Join(root, "etc/containerd/conf.d/shimkit-kata.toml"))
	fmt.Println("after rollback the drop-in exists:", err == nil)
	_ = os.RemoveAll(root)
	// Output:
	// preset: containerd restart: containerd
	// wrote: [/etc/containerd/conf.d/shimkit-kata.toml]
	// after rollback the drop-in exists: false
}
