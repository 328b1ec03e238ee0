// Package systemd drives the node's systemd over D-Bus, from inside a
// privileged pod or on the node itself, with nothing installed on the
// host: Restarter restarts the unit that runs the container runtime,
// Units reloads, restarts and stops sandboxer units.
//
// It guarantees:
//   - the connection goes to systemd's private socket under the host root,
//     or to the system bus socket when the private one refuses (it does
//     for a process outside systemd's PID namespace);
//   - a restart is a systemd restart job, never a signal (containerd exits
//     on SIGHUP), and returns once the job ended: an error wraps
//     ErrRestartFailed (ErrUnitFailed for a sandboxer unit) unless the job
//     ended "done";
//   - the unit restarted is the candidate that runs the runtime: the one
//     loaded, or the running one (containerd's parent among several), else
//     a failed one, never one that is merely loaded (ErrNoUnit);
//   - a unit that hit its start limit is reset once and restarted again.
package systemd
