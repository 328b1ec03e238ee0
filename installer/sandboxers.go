package installer

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"

	"github.com/shimkit/shimkit/containerdconfig"
	"github.com/shimkit/shimkit/installer/plan"
)

const unitBackupSuffix = ".shimkit-backup"

// startSandboxers writes a systemd unit per sandboxer daemon, enables it
// (a multi-user.target.wants link, as systemctl enable makes) and
// (re)starts the units that are new or changed, before containerd is
// restarted to connect to them.
type startSandboxers struct{ written []string }

func (*startSandboxers) name() string { return "units" }

func (s *startSandboxers) do(ctx context.Context, r *run) error {
	i := r.i
	type unit struct {
		path    string
		content []byte
	}
	var todo []unit
	r.rec.Units, r.rec.Written = nil, nil
	for _, sb := range r.plan.Sandboxers {
		p := path.Join(i.paths().unitDir(), sb.Unit)
		r.rec.Units = append(r.rec.Units, p)
		content := unitFile(r.plan.Shim, sb, i.paths().currentDir(r.plan.Shim.Name), r.rt.target.Preset.Units)
		if r.rec.Written == nil {
			r.rec.Written = map[string]string{}
		}
		r.rec.Written[p] = digestOf(content)
		if cur, err := os.ReadFile(i.paths().local(p)); err == nil && bytes.Equal(cur, content) {
			continue
		}
		todo = append(todo, unit{p, content})
	}
	if len(todo) == 0 {
		return nil
	}
	r.pending.Written = map[string]string{}
	for _, u := range todo {
		r.pending.Units = append(r.pending.Units, u.path)
		r.pending.Written[u.path] = digestOf(u.content)
	}
	if err := r.savePending(); err != nil {
		return err
	}
	for _, u := range todo {
		local := i.paths().local(u.path)
		if _, err := os.Stat(local); err == nil {
			if err := copyFile(local, local+unitBackupSuffix); err != nil {
				return err
			}
		}
		s.written, r.changed = append(s.written, u.path), true
		if err := os.MkdirAll(filepath.Dir(local), 0o755); err != nil {
			return err
		}
		if err := containerdconfig.WriteFileAtomic(local, u.content, 0o644); err != nil {
			return err
		}
		if err := enableUnit(i.paths().local(i.paths().unitDir()), path.Base(u.path)); err != nil {
			return err
		}
	}
	if i.Offline {
		return nil
	}
	mgr := sandboxUnits{i}.manager()
	if err := mgr.Reload(ctx); err != nil {
		return err
	}
	for _, u := range todo {
		if err := mgr.Restart(ctx, path.Base(u.path)); err != nil {
			return err
		}
	}
	// A started unit is not a serving daemon: wait for each socket.
	for _, sb := range r.plan.Sandboxers {
		if err := waitSocket(ctx, i.paths().local(sb.Address), time.Duration(r.plan.Restart.Timeout)); err != nil {
			return fmt.Errorf("%w: %s (unit %s): %w", ErrUnitFailed, sb.Name, sb.Unit, err)
		}
	}
	return nil
}

// waitSocket waits until a unix socket accepts connections.
func waitSocket(ctx context.Context, socket string, timeout time.Duration) error {
	if timeout <= 0 {
		timeout = plan.DefaultRestartTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var d net.Dialer
	for {
		conn, err := d.DialContext(ctx, "unix", socket)
		if err == nil {
			return conn.Close()
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("socket %s not served within %v: %w", socket, timeout, err)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func (s *startSandboxers) undo(ctx context.Context, r *run) error {
	if len(s.written) == 0 {
		return nil
	}
	return sandboxUnits{r.i}.restore(ctx, s.written, r.pending.Written)
}

// sandboxUnits is the units role: the sandboxer units' files under
// UnitDir and the UnitManager that runs them.
type sandboxUnits struct{ i *Installer }

// manager is the Installer's UnitManager, systemd over D-Bus by default.
func (u sandboxUnits) manager() UnitManager {
	if u.i.Units != nil {
		return u.i.Units
	}
	return &SystemdUnits{HostRoot: u.i.paths().root()}
}

// restore stops the units at paths, puts back their backups (and restarts
// those) or removes them. A unit file that no longer holds what shimkit
// wrote (written, by node path) was changed by someone else: it is left
// as it is, and the error wraps ErrConcurrentEdit.
func (u sandboxUnits) restore(ctx context.Context, paths []string, written map[string]string) error {
	i := u.i
	var errs []error
	var restored []string
	for _, p := range paths {
		local := i.paths().local(p)
		if cur, err := os.ReadFile(local); err == nil && written[p] != "" && digestOf(cur) != written[p] {
			errs = append(errs, fmt.Errorf("%w: unit file %s was changed after shimkit wrote it; left as it is", ErrConcurrentEdit, p))
			_ = removeIfExists(local + unitBackupSuffix)
			continue
		}
		if !i.Offline {
			errs = append(errs, u.manager().Stop(ctx, path.Base(p)))
		}
		if _, err := os.Stat(local + unitBackupSuffix); err == nil {
			errs = append(errs, os.Rename(local+unitBackupSuffix, local))
			restored = append(restored, path.Base(p))
			continue
		}
		errs = append(errs, removeIfExists(local), removeIfExists(wantsLink(i.paths().local(i.paths().unitDir()), path.Base(p))))
	}
	if !i.Offline {
		errs = append(errs, u.manager().Reload(ctx))
		for _, name := range restored {
			errs = append(errs, u.manager().Restart(ctx, name))
		}
	}
	return errors.Join(errs...)
}

// remove stops and removes units for good.
func (u sandboxUnits) remove(ctx context.Context, paths []string) error {
	i := u.i
	var errs []error
	for _, p := range paths {
		if !i.Offline {
			errs = append(errs, u.manager().Stop(ctx, path.Base(p)))
		}
		errs = append(errs, removeIfExists(i.paths().local(p)), removeIfExists(wantsLink(i.paths().local(i.paths().unitDir()), path.Base(p))))
	}
	if len(paths) > 0 && !i.Offline {
		errs = append(errs, u.manager().Reload(ctx))
	}
	return errors.Join(errs...)
}

// dropBackups commits written units.
func (u sandboxUnits) dropBackups(paths []string) {
	for _, p := range paths {
		_ = removeIfExists(u.i.paths().local(p) + unitBackupSuffix)
	}
}

func wantsLink(unitDir, unit string) string {
	return filepath.Join(unitDir, "multi-user.target.wants", unit)
}

func enableUnit(unitDir, unit string) error {
	link := wantsLink(unitDir, unit)
	if err := os.MkdirAll(filepath.Dir(link), 0o755); err != nil {
		return err
	}
	if cur, err := os.Readlink(link); err == nil && cur == filepath.Join("..", unit) {
		return nil
	}
	_ = os.Remove(link)
	return os.Symlink(filepath.Join("..", unit), link)
}

// unitFile renders a sandboxer's unit. It starts before containerd, so
// that containerd finds the socket when it starts.
func unitFile(shim plan.ShimRef, sb plan.Sandboxer, bundleDir string, containerdUnits []string) []byte {
	var b strings.Builder
	fmt.Fprintf(&b, "# Written by shimkit for Shim %s (uid %s); removed with it.\n", shim.Name, shim.UID)
	fmt.Fprintf(&b, "[Unit]\nDescription=Sandboxer %s of Shim %s (shimkit)\n", sb.Name, shim.Name)
	for _, u := range containerdUnits {
		if !strings.Contains(u, ".") {
			u += ".service"
		}
		fmt.Fprintf(&b, "Before=%s\n", u)
	}
	b.WriteString("\n[Service]\n")
	// The socket's directory, when under /run, is made by systemd at every
	// start (and kept: other daemons may share it).
	if dir := path.Dir(sb.Address); strings.HasPrefix(dir, "/run/") {
		fmt.Fprintf(&b, "RuntimeDirectory=%s\nRuntimeDirectoryPreserve=yes\n", strings.TrimPrefix(dir, "/run/"))
	}
	for _, e := range sb.Environment {
		fmt.Fprintf(&b, "Environment=%s\n", unitQuote(plan.ResolveBundleDir(e, bundleDir)))
	}
	args := make([]string, len(sb.Command))
	for k, a := range sb.Command {
		args[k] = unitQuote(plan.ResolveBundleDir(a, bundleDir))
	}
	fmt.Fprintf(&b, "ExecStart=%s\nRestart=always\nRestartSec=1\n\n[Install]\nWantedBy=multi-user.target\n", strings.Join(args, " "))
	return []byte(b.String())
}

// unitQuote quotes one word for a unit file: double quotes, backslash
// escapes, and $ and % doubled so systemd expands neither.
func unitQuote(s string) string {
	s = strings.NewReplacer(`\`, `\\`, `"`, `\"`, "$", "$$", "%", "%%").Replace(s)
	return `"` + s + `"`
}

func copyFile(src, dst string) error {
	data, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	return containerdconfig.WriteFileAtomic(dst, data, 0o644)
}
