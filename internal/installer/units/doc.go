// Package units keeps the systemd units of a Shim's sandboxer daemons: it
// renders and writes their unit files under the unit directory, enables
// them (a multi-user.target.wants link, as systemctl enable makes), has a
// UnitManager (systemd over D-Bus by default) run them, and puts back or
// removes what it wrote.
//
// It guarantees:
//   - a unit is rendered from the plan alone: it starts before the
//     container runtime's units, runs the sandboxer's command with the
//     bundle placeholder resolved, every word quoted so that systemd
//     expands neither $ nor %;
//   - a unit file whose bytes are already the plan's is not written again
//     and not restarted; one that is replaced keeps a backup until commit
//     (DropBackups);
//   - Start returns only when every sandboxer's socket accepts connections,
//     or fails wrapping ErrUnitFailed (package systemd) naming the unit;
//   - Restore puts back a backup (and restarts it) or removes the unit,
//     but only a file that still holds what shimkit wrote: one changed
//     since is left as it is (ErrConcurrentEdit, package ownership);
//   - Offline, nothing is stopped, reloaded or started: files only;
//   - Drift only reads.
package units
