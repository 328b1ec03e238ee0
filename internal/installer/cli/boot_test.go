package cli_test

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/shimkit/shimkit/internal/golden"
	"github.com/shimkit/shimkit/internal/installer/cli"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// TestBootUnits: boot-units writes the boot unit and a drop-in for each of
// the preset's runtime units (golden), again as often as asked; refuses,
// writing nothing, where a file it would write is someone else's; and
// refuses a preset without a runtime unit and relative paths.
func TestBootUnits(t *testing.T) {
	for _, tc := range []struct {
		preset string
		files  []string
	}{
		{"containerd", []string{"containerd.service.d"}},
		{"k3s", []string{"k3s.service.d", "k3s-agent.service.d"}},
		{"rke2", []string{"rke2-server.service.d", "rke2-agent.service.d"}},
	} {
		t.Run(tc.preset, func(t *testing.T) {
			root := t.TempDir()
			for range 2 { // a second run rewrites its own files
				if code, out, errOut := run(t, "boot-units", "--root", root, "--preset", tc.preset); code != cli.ExitOK {
					t.Fatalf("exit %d: %s%s", code, out, errOut)
				}
			}
			sys := filepath.Join(root, "etc/systemd/system")
			unit, err := os.ReadFile(filepath.Join(sys, cli.BootUnit))
			if err != nil {
				t.Fatal(err)
			}
			golden.Check(t, filepath.Join("testdata", "boot-"+tc.preset+".service"), unit, *update)
			for _, d := range tc.files {
				dropIn, err := os.ReadFile(filepath.Join(sys, d, "10-shimkit-boot.conf"))
				if err != nil || !strings.Contains(string(dropIn), "After="+cli.BootUnit) || !strings.Contains(string(dropIn), "Wants="+cli.BootUnit) {
					t.Errorf("drop-in %s: %q %v", d, dropIn, err)
				}
			}
		})
	}
	t.Run("someone else's unit", func(t *testing.T) {
		root := t.TempDir()
		theirs := filepath.Join(root, "etc/systemd/system/containerd.service.d/10-shimkit-boot.conf")
		if err := os.MkdirAll(filepath.Dir(theirs), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(theirs, []byte("[Unit]\nAfter=mine.service\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		code, _, errOut := run(t, "boot-units", "--root", root, "--preset", "containerd")
		if code != cli.ExitFailed || !strings.Contains(errOut, "10-shimkit-boot.conf exists and was not written by boot-units") {
			t.Errorf("exit %d: %s", code, errOut)
		}
		if got, _ := os.ReadFile(theirs); string(got) != "[Unit]\nAfter=mine.service\n" {
			t.Errorf("their drop-in changed: %q", got)
		}
		if _, err := os.Stat(filepath.Join(root, "etc/systemd/system", cli.BootUnit)); err == nil {
			t.Error("the boot unit was written beside a refusal")
		}
	})
	for _, args := range [][]string{
		{"--preset", "k0s"},
		{"--preset", "containerd", "--plan", "plan.json"},
		{"--preset", "nope"},
	} {
		if code, _, errOut := run(t, append([]string{"boot-units", "--root", t.TempDir()}, args...)...); code != cli.ExitUsage {
			t.Errorf("%v: exit %d, want usage: %s", args, code, errOut)
		}
	}
}
