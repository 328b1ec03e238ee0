package crioconfig

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestRollback: a rolled back Install or Uninstall leaves /etc/crio byte
// for byte as it was, file modes included.
func TestRollback(t *testing.T) {
	ctx := context.Background()
	n := newNode(t)
	n.write("/etc/crio/crio.conf.d/00-admin.conf", "# admin's\r\n[crio.runtime]\r\nlog_level = \"debug\"", 0o600)
	install(n, "shim/a", crunHandler)
	before := n.tree()
	w := NewWriter(n.tg, "shim/a")
	for _, op := range []func() (*Change, error){
		func() (*Change, error) {
			return w.Install(ctx, with(crunHandler, func(h *RuntimeHandler) { h.ContainerMinMemory = "12MiB" }))
		},
		func() (*Change, error) { return w.Install(ctx, kataHandler) },
		func() (*Change, error) { return w.Uninstall(ctx, "crun-wasm") },
	} {
		c, err := op()
		if err != nil || !c.Changed() {
			t.Fatalf("op: %v", err)
		}
		if err := c.Rollback(); err != nil {
			t.Fatal(err)
		}
		if diff := diffTrees(before, n.tree()); diff != "" {
			t.Fatalf("after Rollback: %s", diff)
		}
		if err := c.Rollback(); err == nil {
			t.Error("a second Rollback succeeded")
		}
	}
	fi, err := os.Stat(filepath.Join(n.root, "etc/crio/crio.conf.d/00-admin.conf"))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("admin's file: %v %v", fi.Mode(), err)
	}
}

// TestRollbackConcurrentEdit: an edit made after shimkit's stays.
func TestRollbackConcurrentEdit(t *testing.T) {
	n := newNode(t)
	c, err := NewWriter(n.tg, "shim/a").Install(context.Background(), crunHandler)
	if err != nil {
		t.Fatal(err)
	}
	edited := "# an admin's edit\n"
	n.write("/etc/crio/crio.conf.d/90-shimkit-crun-wasm.conf", edited, 0o644)
	err = c.Rollback()
	if !errors.Is(err, ErrConcurrentEdit) || Reason(err) != ReasonConcurrentEdit {
		t.Fatalf("Rollback = %v", err)
	}
	if got, _ := n.read("/etc/crio/crio.conf.d/90-shimkit-crun-wasm.conf"); got != edited {
		t.Errorf("the edit was lost: %q", got)
	}
	if _, ok := n.read(n.tg.journalPath("crun-wasm")); !ok {
		t.Error("the journal went although the change is not undone")
	}
}

// TestRestore: a change neither committed nor rolled back (a crash) is
// undone from its journal, and blocks new changes until then.
func TestRestore(t *testing.T) {
	ctx := context.Background()
	n := newNode(t)
	install(n, "shim/a", kataHandler)
	before := n.tree()
	if _, err := NewWriter(n.tg, "shim/a").Install(ctx, crunHandler); err != nil {
		t.Fatal(err)
	}
	if _, err := NewWriter(n.tg, "shim/a").Uninstall(ctx, "kata"); err != nil {
		t.Fatal(err)
	}
	// "crash": a new process finds both journals.
	if _, err := NewWriter(n.tg, "shim/a").Install(ctx, crunHandler); !errors.Is(err, ErrPending) {
		t.Fatalf("Install with a pending journal = %v", err)
	}
	for _, h := range []string{"crun-wasm", "kata"} {
		restored, err := Restore(n.tg, h)
		if err != nil || !restored {
			t.Fatalf("Restore(%s) = %v, %v", h, restored, err)
		}
	}
	if diff := diffTrees(before, n.tree()); diff != "" {
		t.Fatalf("after Restore: %s", diff)
	}
	if restored, err := Restore(n.tg, "kata"); restored || err != nil {
		t.Errorf("second Restore = %v, %v", restored, err)
	}
}

// TestNoTempFileInDropInDir: CRI-O loads every file of crio.conf.d, so
// shimkit's temporary files, records and journals are never there, even
// while a write is under way.
func TestNoTempFileInDropInDir(t *testing.T) {
	n := newNode(t)
	n.write("/etc/crio/crio.conf.d/00-admin.conf", "[crio]\n", 0o644)
	names := watchNames(t, filepath.Join(n.root, "etc/crio/crio.conf.d"))
	defer func() {
		got := names() // identical consecutive events are merged by inotify
		if len(got) == 0 {
			t.Error("inotify saw nothing created in the drop-in directory")
		}
		onlyDropIns(t, got, "crun-wasm")
	}()
	w := NewWriter(n.tg, "shim/a")
	c, err := w.Install(context.Background(), crunHandler)
	if err != nil {
		t.Fatal(err)
	}
	if got := n.dropIns(); !slices.Equal(got, []string{"00-admin.conf", "90-shimkit-crun-wasm.conf"}) {
		t.Errorf("pending: drop-in directory holds %v", got)
	}
	if err := c.Commit(); err != nil {
		t.Fatal(err)
	}
	c, err = w.Install(context.Background(), with(crunHandler, func(h *RuntimeHandler) { h.ContainerMinMemory = "2MiB" }))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Rollback(); err != nil {
		t.Fatal(err)
	}
	c, err = w.Uninstall(context.Background(), "crun-wasm")
	if err != nil {
		t.Fatal(err)
	}
	if got := n.dropIns(); !slices.Equal(got, []string{"00-admin.conf"}) {
		t.Errorf("uninstalled: drop-in directory holds %v", got)
	}
	_ = c.Commit()
	if got, _ := os.ReadDir(filepath.Join(n.root, "etc/crio/shimkit")); len(got) != 0 {
		t.Errorf("state directory keeps %v", got)
	}
}

// TestRestoreConcurrentEdit: a crash left a change pending and an admin
// edited the drop-in since: Restore leaves the edit and the journal, new
// changes stay refused until ForgetPending, and then the edited drop-in
// is no longer shimkit's.
func TestRestoreConcurrentEdit(t *testing.T) {
	ctx := context.Background()
	n := newNode(t)
	if _, err := NewWriter(n.tg, "shim/a").Install(ctx, crunHandler); err != nil {
		t.Fatal(err)
	}
	edited := "# the admin's now\n"
	n.write("/etc/crio/crio.conf.d/90-shimkit-crun-wasm.conf", edited, 0o644)
	if restored, err := Restore(n.tg, "crun-wasm"); restored || !errors.Is(err, ErrConcurrentEdit) {
		t.Fatalf("Restore = %v, %v", restored, err)
	}
	if got, _ := n.read("/etc/crio/crio.conf.d/90-shimkit-crun-wasm.conf"); got != edited {
		t.Fatalf("Restore overwrote the edit: %q", got)
	}
	if _, err := NewWriter(n.tg, "shim/a").Install(ctx, crunHandler); !errors.Is(err, ErrPending) {
		t.Fatalf("Install = %v, want ErrPending", err)
	}
	if err := ForgetPending(n.tg, "crun-wasm"); err != nil {
		t.Fatal(err)
	}
	if _, err := NewWriter(n.tg, "shim/a").Install(ctx, crunHandler); !errors.Is(err, ErrNotOurs) {
		t.Fatalf("Install over the edited drop-in = %v, want ErrNotOurs", err)
	}
	if got, _ := n.read("/etc/crio/crio.conf.d/90-shimkit-crun-wasm.conf"); got != edited {
		t.Fatalf("the edit was lost: %q", got)
	}
}
