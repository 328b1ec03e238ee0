package runtime

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/shimkit/shimkit/installer/plan"
)

// fakeProc writes a process into root's /proc: its stat, command line and
// working directory.
func fakeProc(t *testing.T, root string, pid, comm, state, cwd string, args ...string) {
	t.Helper()
	dir := filepath.Join(root, "proc", pid)
	must(t, os.MkdirAll(dir, 0o755))
	must(t, os.WriteFile(filepath.Join(dir, "stat"), []byte(pid+" ("+comm+") "+state+" 1 1 1 0 -1\n"), 0o644))
	must(t, os.WriteFile(filepath.Join(dir, "cmdline"), []byte(strings.Join(args, "\x00")+"\x00"), 0o644))
	if cwd != "" {
		must(t, os.Symlink(cwd, filepath.Join(dir, "cwd")))
	}
}

// fakeBundle writes a task's config.json with the pod's annotations.
func fakeBundle(t *testing.T, root, bundle, annotations string) {
	t.Helper()
	dir := filepath.Join(root, bundle)
	must(t, os.MkdirAll(dir, 0o755))
	must(t, os.WriteFile(filepath.Join(dir, "config.json"), []byte(`{"ociVersion":"1.2.0","annotations":{`+annotations+`}}`), 0o644))
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func TestStuckShims(t *testing.T) {
	root := t.TempDir()
	const task = "/run/containerd/io.containerd.runtime.v2.task/k8s.io/"
	fakeBundle(t, root, task+"aaa", `"io.kubernetes.cri.sandbox-namespace":"default","io.kubernetes.cri.sandbox-name":"web-1"`)
	fakeBundle(t, root, "/run/k3s/containerd/io.containerd.runtime.v2.task/k8s.io/bbb", `"io.kubernetes.cri.sandbox-namespace":"kube-system","io.kubernetes.cri.sandbox-name":"dns"`)
	fakeBundle(t, root, "/run/containers/storage/overlay-containers/ccc/userdata", `"io.kubernetes.pod.namespace":"apps","io.kubernetes.pod.name":"db-0"`)
	// Stopped, found by its working directory.
	fakeProc(t, root, "40", "containerd-shim", "T", task+"aaa", "/usr/local/bin/containerd-shim-runc-v2", "-namespace", "k8s.io", "-id", "aaa", "-address", "/run/containerd/containerd.sock")
	// Traced, its directory unreadable: found from its socket's address.
	fakeProc(t, root, "41", "containerd-shim", "t", "", "/opt/k3s/containerd-shim-runc-v2", "-namespace", "k8s.io", "-id", "bbb", "-address", "/run/k3s/containerd/containerd.sock")
	// CRI-O's conmon in an uninterruptible sleep.
	fakeProc(t, root, "42", "conmon", "D", "", "/usr/bin/conmon", "-c", "ccc", "-b", "/run/containers/storage/overlay-containers/ccc/userdata")
	// A stopped shim whose task has no pod.
	fakeProc(t, root, "43", "containerd-shim", "T", "", "/usr/bin/containerd-shim-runc-v2", "-id", "ddd")
	// Not stuck, or not a shim.
	fakeProc(t, root, "50", "containerd-shim", "S", task+"aaa", "/usr/bin/containerd-shim-runc-v2", "-id", "eee")
	fakeProc(t, root, "51", "sleep", "T", "", "/bin/sleep", "100")
	fakeProc(t, root, "52", "containerd", "D", "", "/usr/bin/containerd")
	must(t, os.MkdirAll(filepath.Join(root, "proc", "53"), 0o755)) // gone while read

	got := StuckShims(root)
	want := []plan.StuckShim{
		{PID: 40, Command: "containerd-shim-runc-v2", State: "T (stopped)", ID: "aaa", Pod: "default/web-1"},
		{PID: 41, Command: "containerd-shim-runc-v2", State: "t (tracing stop)", ID: "bbb", Pod: "kube-system/dns"},
		{PID: 42, Command: "conmon", State: "D (disk sleep)", ID: "ccc", Pod: "apps/db-0"},
		{PID: 43, Command: "containerd-shim-runc-v2", State: "T (stopped)", ID: "ddd"},
	}
	if len(got) != len(want) {
		t.Fatalf("stuck shims: %+v, want %+v", got, want)
	}
	for k := range want {
		if got[k] != want[k] {
			t.Errorf("stuck shim %d: %+v, want %+v", k, got[k], want[k])
		}
	}
	if s := got[0].String(); s != "pid 40 containerd-shim-runc-v2 (T (stopped), pod default/web-1)" {
		t.Errorf("String: %q", s)
	}
	if s := got[3].String(); s != "pid 43 containerd-shim-runc-v2 (T (stopped), task ddd)" {
		t.Errorf("String: %q", s)
	}
	if got := StuckShims(filepath.Join(root, "none")); got != nil {
		t.Errorf("no /proc: %+v", got)
	}
}

// fakeUnit is a UnitStater that answers as told.
type fakeUnit struct{ active, sub string }

func (u fakeUnit) UnitState(context.Context) (string, string, string, error) {
	return "containerd.service", u.active, u.sub, nil
}

func TestDiagnosed(t *testing.T) {
	stuck := t.TempDir()
	fakeProc(t, stuck, "40", "containerd-shim", "T", "", "/usr/bin/containerd-shim-runc-v2", "-id", "aaa")
	failed := errors.New("restart failed")
	for _, c := range []struct {
		name     string
		node     Node
		err      error
		wantHang string // "": err as it was
	}{
		{"no error", Node{Host: stuck, Unit: fakeUnit{"activating", "start"}}, nil, ""},
		{"nothing to look at", Node{}, failed, ""},
		{"a unit still starting", Node{Unit: fakeUnit{"activating", "start"}}, failed, "containerd.service activating (start)"},
		{"a unit running, nothing stuck", Node{Host: t.TempDir(), Unit: fakeUnit{"active", "running"}}, failed, ""},
		{"a stopped shim", Node{Host: stuck, Unit: fakeUnit{"active", "running"}}, failed,
			"containerd.service active (running); shim processes that cannot answer: pid 40 containerd-shim-runc-v2 (T (stopped), task aaa)"},
		{"a stopped shim, no unit", Node{Host: stuck}, failed, "shim processes that cannot answer: pid 40 containerd-shim-runc-v2 (T (stopped), task aaa)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := diagnosed(context.Background(), &c.node, c.err)
			_, h := Details(err)
			ok := h != nil
			switch {
			case c.wantHang == "":
				if ok || err != c.err {
					t.Errorf("diagnosed: %v, want %v as it was", err, c.err)
				}
			case !ok || h.String() != c.wantHang || !errors.Is(err, failed):
				t.Errorf("diagnosed: %v (hang %v), want %q wrapping %v", err, h, c.wantHang, failed)
			case err.Error() != "restart failed; on the node: "+c.wantHang:
				t.Errorf("message: %q", err.Error())
			}
		})
	}
}

// FuzzStuckShim: whatever a process's stat and command line hold,
// reading it never fails the caller, and a shim it reports is stuck.
func FuzzStuckShim(f *testing.F) {
	f.Add("40 (containerd-shim) T 1 1 1 0 -1\n", "/usr/bin/containerd-shim-runc-v2\x00-id\x00aaa\x00-address\x00/run/containerd/containerd.sock\x00")
	f.Add("42 (conmon) D 1", "/usr/bin/conmon\x00-c\x00ccc\x00-b\x00/run/x\x00")
	f.Add("43 (a) b) (containerd-shim) t", "")
	f.Add("(", "-id")
	f.Add("44 (containerd-shim) ", "-namespace=k8s.io\x00-id=\x00")
	f.Fuzz(func(t *testing.T, stat, cmdline string) {
		root := t.TempDir()
		dir := filepath.Join(root, "proc", "44")
		must(t, os.MkdirAll(dir, 0o755))
		must(t, os.WriteFile(filepath.Join(dir, "stat"), []byte(stat), 0o644))
		must(t, os.WriteFile(filepath.Join(dir, "cmdline"), []byte(cmdline), 0o644))
		s, ok := stuckShim(root, dir)
		if ok && (s.PID != 44 || s.State == "") {
			t.Fatalf("stuck shim %+v from stat %q", s, stat)
		}
	})
}
