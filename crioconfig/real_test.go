package crioconfig_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pelletier/go-toml/v2"
	"github.com/shimkit/shimkit/crioconfig"
	"github.com/shimkit/shimkit/internal/testutil"
)

// The tests below run a real crio (hack/bins.sh builds CRI-O v1.34.0 from
// the module proxy; Debian's conmon and crun run its containers) and ask
// CRI-O itself what it loaded: `crio config` (the merged files) and the
// CRI Status runtime handlers (what the daemon validated and kept).

func target(c *testutil.CRIO) crioconfig.Target {
	return crioconfig.Target{Config: c.Config, DropInDir: c.DropInDir, StateDir: c.StateDir}
}

// installCopy copies src into the CRI-O's directory at rel, executable,
// as shimkit's installer places a bundle's binary, and returns its path.
func installCopy(t *testing.T, c *testutil.CRIO, src, rel string) string {
	t.Helper()
	dst := filepath.Join(c.Dir, rel)
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		t.Fatal(err)
	}
	in, err := os.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
	return dst
}

// effectiveHandlers decodes `crio config` and returns its runtime tables.
func effectiveHandlers(t *testing.T, c *testutil.CRIO) map[string]map[string]any {
	t.Helper()
	out, err := c.ConfigOutput(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Crio struct {
			Runtime struct {
				Runtimes map[string]map[string]any `toml:"runtimes"`
			} `toml:"runtime"`
		} `toml:"crio"`
	}
	if err := toml.Unmarshal(out, &doc); err != nil {
		t.Fatalf("crio config output does not parse: %v\n%s", err, out)
	}
	return doc.Crio.Runtime.Runtimes
}

func restart(t *testing.T, c *testutil.CRIO) time.Duration {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	start := time.Now()
	if err := c.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	return time.Since(start)
}

// TestRealCRIOLoadsHandlers: an oci handler (crun, copied as a Shim's
// bundle would place it) and a vm handler (containerd's runc shim v2,
// named as CRI-O requires) written by the Writer are merged by CRI-O
// (`crio config`) and kept by its daemon (CRI Status runtime handlers);
// uninstalling them leaves the config directory byte for byte as it was
// and the handlers gone after the next restart.
func TestRealCRIOLoadsHandlers(t *testing.T) {
	t.Parallel() // each runs its own crio
	c := testutil.StartCRIO(t)
	before := testutil.FileTree(t, filepath.Dir(c.Config))
	crun := installCopy(t, c, "/usr/bin/crun", "opt/shimkit/crun-shimkit/bin/crun")
	shim := installCopy(t, c, "/usr/bin/containerd-shim-runc-v2", "opt/shimkit/runc-vm/bin/containerd-shim-runc-v2")
	oci := crioconfig.RuntimeHandler{Name: "crun-shimkit", Kind: crioconfig.KindOCI, RuntimePath: crun, RuntimeRoot: filepath.Join(c.Dir, "run/crun-shimkit"),
		AllowedAnnotations: []string{"module.wasm.image/variant", "run.oci."}, ContainerMinMemory: "4MiB"}
	shimConfig := filepath.Join(c.Dir, "opt/shimkit/runc-vm/configuration.toml")
	writeFiles(t, map[string]string{shimConfig: "# the shim's own configuration\n"})
	vm := crioconfig.RuntimeHandler{Name: "runc-vm", Kind: crioconfig.KindVM, RuntimePath: shim, RuntimeConfigPath: shimConfig,
		AllowedAnnotations: []string{"io.kubernetes.cri-o.Devices"}}
	w := crioconfig.NewWriter(target(c), "shim/test")
	ctx := context.Background()
	for _, h := range []crioconfig.RuntimeHandler{oci, vm} {
		change, err := w.Install(ctx, h)
		if err != nil {
			t.Fatal(err)
		}
		if err := change.Commit(); err != nil {
			t.Fatal(err)
		}
	}
	eff := effectiveHandlers(t, c)
	if got := eff["crun-shimkit"]; got["runtime_path"] != crun || got["runtime_type"] != "oci" || got["container_min_memory"] != "4MiB" ||
		!slices.Equal(anyStrings(got["allowed_annotations"]), oci.AllowedAnnotations) {
		t.Errorf("crio config: crun-shimkit = %v", got)
	}
	if got := eff["runc-vm"]; got["runtime_path"] != shim || got["runtime_type"] != "vm" || got["runtime_config_path"] != shimConfig {
		t.Errorf("crio config: runc-vm = %v", got)
	}
	if hs := c.CRI.Handlers(t); slices.Contains(hs, "crun-shimkit") {
		t.Fatalf("CRI-O announced crun-shimkit before a restart: %v", hs)
	}
	took := restart(t, c)
	hs := c.CRI.Handlers(t)
	t.Logf("CRI-O %s restarted in %v; runtime handlers %v", c.Version, took, hs)
	for _, h := range []string{"crun", "crun-shimkit", "runc-vm"} {
		if !slices.Contains(hs, h) {
			t.Errorf("CRI Status lacks handler %q: %v\n%s", h, hs, c.Log.Tail())
		}
	}
	for _, h := range []string{"crun-shimkit", "runc-vm"} {
		change, err := w.Uninstall(ctx, h)
		if err != nil {
			t.Fatal(err)
		}
		if err := change.Commit(); err != nil {
			t.Fatal(err)
		}
	}
	restart(t, c)
	if hs := c.CRI.Handlers(t); slices.Contains(hs, "crun-shimkit") || slices.Contains(hs, "runc-vm") {
		t.Errorf("handlers after uninstall and restart: %v", hs)
	}
	after := testutil.FileTree(t, filepath.Dir(c.Config))
	if !maps.Equal(before, after) {
		t.Errorf("uninstall did not leave %s as it was:\nbefore %v\nafter  %v", filepath.Dir(c.Config), slices.Sorted(maps.Keys(before)), slices.Sorted(maps.Keys(after)))
	}
}

func anyStrings(v any) []string {
	l, _ := v.([]any)
	var out []string
	for _, e := range l {
		s, _ := e.(string)
		out = append(out, s)
	}
	return out
}

// TestRealCRIODropsBadHandlersSilently shows why the Writer checks before
// writing: drop-ins written by hand with a missing binary, a vm binary
// not named containerd-shim-*-v2 and an unknown allowed annotation let
// CRI-O start and announce RuntimeReady without those handlers, only
// logging that they are ignored (RuntimeConfig.ValidateRuntimes). The
// Writer refuses each of them, and writes nothing.
func TestRealCRIODropsBadHandlersSilently(t *testing.T) {
	t.Parallel() // each runs its own crio
	c := testutil.NewCRIO(t)
	notShim := installCopy(t, c, "/usr/bin/containerd-shim-runc-v2", "opt/bad/runc-shim")
	crun := installCopy(t, c, "/usr/bin/crun", "opt/bad/crun")
	bad := []crioconfig.RuntimeHandler{
		{Name: "missing", Kind: crioconfig.KindOCI, RuntimePath: filepath.Join(c.Dir, "opt/bad/nothing-here")},
		{Name: "misnamed", Kind: crioconfig.KindVM, RuntimePath: notShim},
		{Name: "badann", Kind: crioconfig.KindOCI, RuntimePath: crun, AllowedAnnotations: []string{"io.kubernetes.cri-o.NoSuchThing"}},
	}
	var byHand bytes.Buffer
	for _, h := range bad {
		byHand.Write(crioconfig.Render("by hand", h))
	}
	handWritten := filepath.Join(c.DropInDir, "50-by-hand.conf")
	if err := os.WriteFile(handWritten, byHand.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	hs := c.CRI.Handlers(t)
	for _, h := range bad {
		if slices.Contains(hs, h.Name) {
			t.Errorf("CRI-O kept the bad handler %q: %v", h.Name, hs)
		}
		if !strings.Contains(c.Log.String(), `Runtime handler \"`+h.Name+`\" is being ignored`) {
			t.Errorf("CRI-O's log does not say it ignores %q:\n%s", h.Name, c.Log.Tail())
		}
	}
	// The Writer refuses them before writing anything (the hand-written
	// file is removed first: it would be a foreign handler of each name).
	if err := os.Remove(handWritten); err != nil {
		t.Fatal(err)
	}
	before := testutil.FileTree(t, filepath.Dir(c.Config))
	w := crioconfig.NewWriter(target(c), "shim/test")
	for i, want := range []error{crioconfig.ErrBinary, crioconfig.ErrInvalidHandler, crioconfig.ErrInvalidHandler} {
		if _, err := w.Install(context.Background(), bad[i]); !errors.Is(err, want) {
			t.Errorf("Install(%s) = %v, want %v", bad[i].Name, err, want)
		}
	}
	if after := testutil.FileTree(t, filepath.Dir(c.Config)); !maps.Equal(before, after) {
		t.Errorf("a refused Install wrote: %v", slices.Sorted(maps.Keys(after)))
	}
}

// TestRealCRIOForeignFileAndRollback: CRI-O reads every file under
// crio.conf.d, recursively and whatever its name (criocli mergeConfig ->
// UpdateFromPath's filepath.Walk): an admin's backup file in a
// subdirectory defines a handler CRI-O merges, so the Writer refuses a
// handler of that name. With it gone, the Writer's handler is loaded
// beside the admin's, whose file stays byte for byte; no file of
// shimkit's but its drop-in ever appears in crio.conf.d (inotify); and a
// rollback restores the directory byte for byte and CRI-O without the
// handler after a restart.
func TestRealCRIOForeignFileAndRollback(t *testing.T) {
	t.Parallel() // each runs its own crio
	c := testutil.NewCRIO(t)
	crun := installCopy(t, c, "/usr/bin/crun", "opt/shimkit/crun-shimkit/bin/crun")
	admin := filepath.Join(c.DropInDir, "50-admin.conf")
	adminText := "# an admin's drop-in\r\n[crio.runtime.runtimes.admin-rt]\r\nruntime_path = \"/usr/bin/crun\"\r\nruntime_root = \"" + filepath.Join(c.Dir, "run/admin-rt") + "\"\r\n"
	backup := filepath.Join(c.DropInDir, "old", "crun-shimkit.conf.bak")
	writeFiles(t, map[string]string{admin: adminText, backup: "[crio.runtime.runtimes.crun-shimkit]\nruntime_path = \"/usr/bin/runc\"\n"})
	eff := effectiveHandlers(t, c)
	if eff["crun-shimkit"]["runtime_path"] != "/usr/bin/runc" || eff["admin-rt"] == nil {
		t.Fatalf("crio config does not merge the backup file in a subdirectory: %v", eff)
	}
	w := crioconfig.NewWriter(target(c), "shim/test")
	h := crioconfig.RuntimeHandler{Name: "crun-shimkit", Kind: crioconfig.KindOCI, RuntimePath: crun}
	ctx := context.Background()
	var fe *crioconfig.FileError
	if _, err := w.Install(ctx, h); !errors.Is(err, crioconfig.ErrForeignHandler) || !errors.As(err, &fe) || fe.Path != backup {
		t.Fatalf("Install over the backup's handler = %v, want ErrForeignHandler naming %s", err, backup)
	}
	if err := os.RemoveAll(filepath.Dir(backup)); err != nil { // the admin cleans up
		t.Fatal(err)
	}
	startCtx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	if err := c.Start(startCtx); err != nil {
		t.Fatal(err)
	}
	before := testutil.FileTree(t, filepath.Dir(c.Config))
	names := crioconfig.WatchNames(t, c.DropInDir)
	change, err := w.Install(ctx, h)
	if err != nil {
		t.Fatal(err)
	}
	restart(t, c)
	if hs := c.CRI.Handlers(t); !slices.Contains(hs, "crun-shimkit") || !slices.Contains(hs, "admin-rt") {
		t.Fatalf("CRI Status handlers %v, want crun-shimkit and admin-rt\n%s", hs, c.Log.Tail())
	}
	if err := change.Rollback(); err != nil {
		t.Fatal(err)
	}
	restart(t, c)
	if hs := c.CRI.Handlers(t); slices.Contains(hs, "crun-shimkit") || !slices.Contains(hs, "admin-rt") {
		t.Errorf("after rollback and restart: handlers %v", hs)
	}
	seen := names()
	crioconfig.OnlyDropIns(t, seen, "crun-shimkit")
	if len(seen) == 0 {
		t.Error("inotify saw nothing: the drop-in was never written")
	}
	if after := testutil.FileTree(t, filepath.Dir(c.Config)); !maps.Equal(before, after) {
		t.Errorf("rollback did not restore %s byte for byte:\nbefore %v\nafter  %v", filepath.Dir(c.Config), slices.Sorted(maps.Keys(before)), slices.Sorted(maps.Keys(after)))
	}
	if got, _ := os.ReadFile(admin); string(got) != adminText {
		t.Errorf("the admin's drop-in changed: %q", got)
	}
}

// TestRealCRIOStopsOnUnreadableDropIn: a file under crio.conf.d that is
// not TOML (whatever its name), or a symlink to a directory there, stops
// CRI-O (`crio config` fails as the daemon would); the Writer refuses to
// add a handler beside it (ErrParse naming the file), so that CRI-O is
// not restarted into a failure that is not shimkit's.
func TestRealCRIOStopsOnUnreadableDropIn(t *testing.T) {
	t.Parallel() // each runs its own crio
	cases := []struct {
		name  string
		setup func(t *testing.T, c *testutil.CRIO) string // returns the offending file
	}{
		{"notes file that is not TOML", func(t *testing.T, c *testutil.CRIO) string {
			p := filepath.Join(c.DropInDir, "README.txt")
			if err := os.WriteFile(p, []byte("Drop-ins go here: [crio.runtime\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			return p
		}},
		{"symlink to a directory", func(t *testing.T, c *testutil.CRIO) string {
			p := filepath.Join(c.DropInDir, "60-link")
			if err := os.Symlink(c.Dir, p); err != nil {
				t.Fatal(err)
			}
			return p
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := testutil.NewCRIO(t)
			bad := tc.setup(t, c)
			if out, err := c.ConfigOutput(context.Background()); err == nil || !strings.Contains(err.Error(), bad) {
				t.Fatalf("crio config with %s: %v\n%s", bad, err, out)
			}
			crun := installCopy(t, c, "/usr/bin/crun", "opt/shimkit/bin/crun")
			_, err := crioconfig.NewWriter(target(c), "shim/test").Install(context.Background(),
				crioconfig.RuntimeHandler{Name: "crun-shimkit", Kind: crioconfig.KindOCI, RuntimePath: crun})
			var fe *crioconfig.FileError
			if !errors.Is(err, crioconfig.ErrParse) || !errors.As(err, &fe) || fe.Path != bad {
				t.Fatalf("Install = %v, want ErrParse naming %s", err, bad)
			}
			if _, err := os.Stat(filepath.Join(c.DropInDir, crioconfig.DropInName("crun-shimkit"))); err == nil {
				t.Error("the drop-in was written")
			}
		})
	}
}

// writeFiles writes each file (mode 0600, as an admin's may be), creating
// its directory.
func writeFiles(t *testing.T, files map[string]string) {
	t.Helper()
	for p, data := range files {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
	}
}
