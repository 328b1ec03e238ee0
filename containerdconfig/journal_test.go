package containerdconfig_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/shimkit/shimkit/containerdconfig"
)

// kata is a second handler for operations that change one file twice.
var kata = containerdconfig.RuntimeHandler{Name: "kata", RuntimeType: "io.containerd.kata.v2"}

// applyAll applies the mutators of one operation without committing, as
// an installer that crashes before the commit does.
func applyAll(t *testing.T, ms ...containerdconfig.Mutator) []*containerdconfig.Change {
	t.Helper()
	var out []*containerdconfig.Change
	for _, m := range ms {
		c, err := m.Apply(context.Background())
		if err != nil || !c.Changed() {
			t.Fatalf("apply: %v", err)
		}
		out = append(out, c)
	}
	return out
}

func nodeWith(t *testing.T, config string) (containerdconfig.Target, string) {
	t.Helper()
	root := t.TempDir()
	writeTree(t, root, map[string]string{"/etc/containerd/config.toml": config})
	p, _ := containerdconfig.PresetNamed(containerdconfig.PresetContainerd)
	return containerdconfig.Target{Root: root, Preset: p}, filepath.Join(root, "etc/containerd/config.toml")
}

// TestJournalOfOneOperation: several Changes of one file (two handlers and
// a proxy plugin) share one journal that holds the oldest original and the
// newest written bytes; Restore after a crash puts the original back, or
// with another writer's edit in between, undoes only shimkit's blocks; the
// Changes' own Rollbacks, newest first, do the same; Commit drops the
// journal.
func TestJournalOfOneOperation(t *testing.T) {
	for _, tt := range []struct {
		name  string
		other func([]byte) []byte
		undo  string // restore, rollback or commit
	}{
		{"restore", noEdit, "restore"},
		{"restore-after-other-writer", appendTable, "restore"},
		{"rollback", noEdit, "rollback"},
		{"rollback-after-other-writer", editElswhere, "rollback"},
		{"commit", noEdit, "commit"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			target, cfg := nodeWith(t, plainV2)
			changes := applyAll(t, containerdconfig.NewInstall(target, spin), containerdconfig.NewInstallProxyPlugin(target, vmm), containerdconfig.NewInstall(target, kata))
			written, _ := os.ReadFile(cfg)

			var j struct {
				Format  int    `json:"shimkitJournal"`
				File    string `json:"file"`
				Changes []struct {
					Existed       bool
					Before, After string
				} `json:"changes"`
			}
			data, err := os.ReadFile(cfg + ".shimkit-journal")
			if err != nil || json.Unmarshal(data, &j) != nil {
				t.Fatalf("journal: %v\n%s", err, data)
			}
			if n := len(j.Changes); j.Format != 1 || j.File != "/etc/containerd/config.toml" || n != 3 || !j.Changes[0].Existed ||
				j.Changes[0].Before != plainV2 || j.Changes[n-1].After != string(written) {
				t.Errorf("journal does not hold the oldest original and the newest written bytes:\n%s", data)
			}
			if entries, _ := os.ReadDir(filepath.Dir(cfg)); len(entries) != 2 {
				t.Errorf("beside the config while pending: %v, want the journal only", entries)
			}

			if err := os.WriteFile(cfg, tt.other(written), 0o644); err != nil {
				t.Fatal(err)
			}
			want := tt.other([]byte(plainV2))
			switch tt.undo {
			case "restore":
				if restored, err := containerdconfig.Restore(cfg); err != nil || !restored {
					t.Fatalf("Restore = %v, %v", restored, err)
				}
			case "rollback":
				for k := len(changes) - 1; k >= 0; k-- {
					if err := changes[k].Rollback(); err != nil {
						t.Fatal(err)
					}
				}
			case "commit":
				for _, c := range changes {
					if err := c.Commit(); err != nil {
						t.Fatal(err)
					}
				}
				want = written
			}
			if got, _ := os.ReadFile(cfg); !bytes.Equal(got, want) {
				t.Errorf("after %s:\n%s", tt.undo, cmp.Diff(string(want), string(got)))
			}
			if entries, _ := os.ReadDir(filepath.Dir(cfg)); len(entries) != 1 {
				t.Errorf("left beside the config: %v", entries)
			}
		})
	}
}

// TestRestoreCrashBeforeWrite: the journal was written but the file was
// not (a crash in between); Restore finds the original and only drops the
// journal.
func TestRestoreCrashBeforeWrite(t *testing.T) {
	target, cfg := nodeWith(t, plainV2)
	applyAll(t, containerdconfig.NewInstall(target, spin))
	if err := os.WriteFile(cfg, []byte(plainV2), 0o644); err != nil {
		t.Fatal(err)
	}
	if restored, err := containerdconfig.Restore(cfg); err != nil || !restored {
		t.Fatalf("Restore = %v, %v", restored, err)
	}
	if got, _ := os.ReadFile(cfg); string(got) != plainV2 {
		t.Errorf("after Restore: %q", got)
	}
	if _, err := os.Stat(cfg + ".shimkit-journal"); !os.IsNotExist(err) {
		t.Errorf("journal left: %v", err)
	}
}

// TestRestoreLegacyBackup: a .shimkit-backup that an older shimkit left is
// put back as it did.
func TestRestoreLegacyBackup(t *testing.T) {
	_, cfg := nodeWith(t, "version = 2\n# edited by an old shimkit\n")
	if err := os.WriteFile(cfg+".shimkit-backup", []byte(plainV2), 0o600); err != nil {
		t.Fatal(err)
	}
	if restored, err := containerdconfig.Restore(cfg); err != nil || !restored {
		t.Fatalf("Restore = %v, %v", restored, err)
	}
	if got, _ := os.ReadFile(cfg); string(got) != plainV2 {
		t.Errorf("after Restore: %q", got)
	}
	if entries, _ := os.ReadDir(filepath.Dir(cfg)); len(entries) != 1 {
		t.Errorf("left beside the config: %v", entries)
	}
	if restored, err := containerdconfig.Restore(cfg); err != nil || restored {
		t.Errorf("second Restore = %v, %v; want nothing to do", restored, err)
	}
}

// TestJournalRefusesForeignPendingState: a journal whose last change the
// file no longer holds (someone edited the file between two Changes, or a
// crashed operation was not restored) stops the next Change before it
// writes anything, until ForgetPending accepts the file as it is.
func TestJournalRefusesForeignPendingState(t *testing.T) {
	target, cfg := nodeWith(t, plainV2)
	applyAll(t, containerdconfig.NewInstall(target, spin))
	edited := appendTable(mustRead(t, cfg))
	if err := os.WriteFile(cfg, edited, 0o644); err != nil {
		t.Fatal(err)
	}
	journal := mustRead(t, cfg+".shimkit-journal")
	_, err := containerdconfig.NewInstall(target, kata).Apply(context.Background())
	if !errors.Is(err, containerdconfig.ErrConcurrentEdit) {
		t.Fatalf("err = %v, want ErrConcurrentEdit", err)
	}
	if got := mustRead(t, cfg); !bytes.Equal(got, edited) {
		t.Error("the config changed")
	}
	if got := mustRead(t, cfg+".shimkit-journal"); !bytes.Equal(got, journal) {
		t.Error("the journal changed")
	}
	if err := containerdconfig.ForgetPending(cfg); err != nil {
		t.Fatal(err)
	}
	change, err := containerdconfig.NewInstall(target, kata).Apply(context.Background())
	if err != nil || !change.Changed() {
		t.Fatalf("install after ForgetPending: %v", err)
	}
	if err := change.Rollback(); err != nil {
		t.Fatal(err)
	}
	if got := mustRead(t, cfg); !bytes.Equal(got, edited) {
		t.Errorf("after rollback: %s", got)
	}
}
