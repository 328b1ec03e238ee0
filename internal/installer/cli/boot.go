package cli

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"

	"github.com/shimkit/shimkit/containerdconfig"
	"github.com/shimkit/shimkit/installer"
)

// Install at boot: boot-units writes, into a node image's root
// filesystem, a systemd unit that carries out a node plan offline before
// the runtime's first start (shimkit-installer install --offline), and a
// drop-in that orders each of the runtime's units after it. containerd
// (and k3s, RKE2) registers a handler whose config is there when it
// starts: the node joins with the shim and nothing is restarted; the
// operator's install Job then finds it installed and changes nothing. A
// failed boot install does not hold the runtime back (Wants, not
// Requires): the node joins without the shim and the operator installs
// it.

// BootUnit is the name of the unit boot-units writes.
const BootUnit = "shimkit-boot.service"

// bootMarker heads every file boot-units writes: a file without it is
// someone else's, and is never overwritten.
const bootMarker = "# Written by shimkit-installer boot-units: install at boot (do not edit)\n"

// bootSpec is what the boot unit runs: the installer and the plan (node
// paths), the units it goes before and how long the runtime waits for it.
type bootSpec struct {
	installer, plan, result string
	before                  []string
	timeout                 time.Duration
}

// bootFiles are the unit and its drop-ins, by node path.
func bootFiles(s bootSpec) map[string][]byte {
	units := make([]string, len(s.before))
	for k, u := range s.before {
		units[k] = u + ".service"
	}
	unit := bootMarker + `[Unit]
Description=shimkit: install the shims of ` + s.plan + ` before the runtime starts
Documentation=https://github.com/shimkit/shimkit/blob/main/docs/guides/node-types.md#install-at-boot
ConditionPathExists=` + s.plan + `
Wants=network-online.target
After=network-online.target
Before=` + strings.Join(units, " ") + `

[Service]
Type=oneshot
RemainAfterExit=yes
TimeoutStartSec=` + fmt.Sprint(int(s.timeout.Seconds())) + `
ExecStart=` + s.installer + ` install --offline --plan ` + s.plan + ` --result ` + s.result + ` --log-format json
`
	files := map[string][]byte{"/etc/systemd/system/" + BootUnit: []byte(unit)}
	for _, u := range units {
		files["/etc/systemd/system/"+u+".d/10-shimkit-boot.conf"] = []byte(bootMarker + "[Unit]\nWants=" + BootUnit + "\nAfter=" + BootUnit + "\n")
	}
	return files
}

// bootUnits is the boot-units command.
func bootUnits(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("shimkit-installer boot-units", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, `usage: shimkit-installer boot-units --root DIR [flags]

Writes into a node image's root filesystem the systemd unit `+BootUnit+`, which
installs a node plan (shimkit-installer install --offline) before the runtime
first starts, and a drop-in that orders each of the runtime's units after it:
the node boots with the shims and nothing is restarted. A file it would write
that it did not write before is left as it is, and nothing is written.
`)
		fs.PrintDefaults()
	}
	root := fs.String("root", "", "the node image's root filesystem (required)")
	planPath := fs.String("plan", "/etc/shimkit/boot/plan.json", "node path of the NodePlan (or NodePlanList) to install at boot")
	bin := fs.String("installer", "/usr/local/bin/shimkit-installer", "node path of shimkit-installer")
	preset := fs.String("preset", "", "distribution preset whose runtime units wait for the install: containerd, k3s, rke2, microk8s (default: detected)")
	timeout := fs.Duration("timeout", 3*time.Minute, "how long the runtime waits for the install at most")
	if err := fs.Parse(args); err != nil {
		return ExitUsage
	}
	for name, p := range map[string]string{"--plan": *planPath, "--installer": *bin} {
		if !path.IsAbs(p) {
			fmt.Fprintf(stderr, "shimkit-installer boot-units: %s %q: want an absolute node path\n", name, p)
			return ExitUsage
		}
	}
	if *root == "" || *timeout < time.Second {
		fmt.Fprintln(stderr, "shimkit-installer boot-units: --root is required, and --timeout at least 1s")
		return ExitUsage
	}
	p, err := pickPreset(*root, *preset)
	if err != nil {
		fmt.Fprintln(stderr, "shimkit-installer boot-units:", err)
		return ExitUsage
	}
	files := bootFiles(bootSpec{installer: *bin, plan: *planPath, result: installer.DefaultStateDir + "/boot-result.json", before: p.Units, timeout: *timeout})
	if err := writeOwn(*root, files); err != nil {
		fmt.Fprintln(stderr, "shimkit-installer boot-units:", err)
		return ExitFailed
	}
	fmt.Fprintf(stdout, "install at boot: %s before %s, plan %s\n", BootUnit, strings.Join(p.Units, ", "), *planPath)
	return ExitOK
}

// pickPreset is the named preset, or the one detected in root; one
// without a runtime unit (k0s reloads its drop-ins) has nothing to order.
func pickPreset(root, name string) (containerdconfig.Preset, error) {
	p, err := containerdconfig.Detect(root)
	if name != "" {
		p, err = containerdconfig.PresetNamed(name)
	}
	if err != nil {
		return p, err
	}
	if len(p.Units) == 0 {
		return p, fmt.Errorf("preset %s starts containerd without a unit of its own: run shimkit-installer install --offline --root in the image instead", p.Name)
	}
	return p, nil
}

// errNotOurs: a file boot-units would write exists and was not written by
// it.
var errNotOurs = errors.New("exists and was not written by boot-units: left as it is")

// writeOwn writes each file under root, refusing, before it writes any,
// when one exists that boot-units did not write.
func writeOwn(root string, files map[string][]byte) error {
	for p := range files {
		old, err := os.ReadFile(filepath.Join(root, p))
		switch {
		case errors.Is(err, fs.ErrNotExist):
		case err != nil:
			return err
		case !bytes.HasPrefix(old, []byte(bootMarker)):
			return fmt.Errorf("%s %w", p, errNotOurs)
		}
	}
	for p, data := range files {
		full := filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(full, data, 0o644); err != nil {
			return err
		}
	}
	return nil
}
