package units

import (
	"context"
	"fmt"
	"net"
	"path"
	"strings"
	"time"

	"github.com/shimkit/shimkit/installer/plan"
	"github.com/shimkit/shimkit/internal/installer/systemd"
)

// Start has systemd read the unit files again, (re)starts the units of
// files, then waits until every sandboxer serves its socket (timeout per
// socket; 0: plan.DefaultRestartTimeout): a started unit is not a serving
// daemon. Offline, it does nothing.
func (u Units) Start(ctx context.Context, files []File, sbs []plan.Sandboxer, timeout time.Duration) error {
	if u.Offline {
		return nil
	}
	mgr := u.manager()
	if err := mgr.Reload(ctx); err != nil {
		return err
	}
	for _, f := range files {
		if err := mgr.Restart(ctx, path.Base(f.Path)); err != nil {
			return err
		}
	}
	for _, sb := range sbs {
		if err := waitSocket(ctx, u.Layout.Local(sb.Address), timeout); err != nil {
			return fmt.Errorf("%w: %s (unit %s): %w", systemd.ErrUnitFailed, sb.Name, sb.Unit, err)
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

// render renders a sandboxer's unit. It starts before the runtime's units
// (runtimeUnits), so that the runtime finds the socket when it starts.
func render(shim plan.ShimRef, sb plan.Sandboxer, bundleDir string, runtimeUnits []string) []byte {
	var b strings.Builder
	fmt.Fprintf(&b, "# Written by shimkit for Shim %s (uid %s); removed with it.\n", shim.Name, shim.UID)
	fmt.Fprintf(&b, "[Unit]\nDescription=Sandboxer %s of Shim %s (shimkit)\n", sb.Name, shim.Name)
	for _, u := range runtimeUnits {
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
		fmt.Fprintf(&b, "Environment=%s\n", quote(plan.ResolveBundleDir(e, bundleDir)))
	}
	args := make([]string, len(sb.Command))
	for k, a := range sb.Command {
		args[k] = quote(plan.ResolveBundleDir(a, bundleDir))
	}
	fmt.Fprintf(&b, "ExecStart=%s\nRestart=always\nRestartSec=1\n\n[Install]\nWantedBy=multi-user.target\n", strings.Join(args, " "))
	return []byte(b.String())
}

// quote quotes one word for a unit file: double quotes, backslash
// escapes, and $ and % doubled so systemd expands neither.
func quote(s string) string {
	s = strings.NewReplacer(`\`, `\\`, `"`, `\"`, "$", "$$", "%", "%%").Replace(s)
	return `"` + s + `"`
}
