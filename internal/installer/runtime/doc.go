// Package runtime adapts the node's container runtime to the node
// installer: containerd's (its config through package containerdconfig,
// the preset's unit) and CRI-O's (a drop-in of shimkit's own per handler
// through package crioconfig, crio.service), each configured as one
// change that is committed or rolled back byte for byte, restarted
// through a Restarter (systemd over D-Bus by default) and checked over CRI
// (CRIHealth). For picks the runtime of a node: the caller's, else the
// plan's, else containerd when a preset or mode is given, else the one
// detected.
//
// It guarantees:
//   - Configure checks the whole edit before it writes anything, journals
//     the files it may write first, and on a failure rolls back what it
//     did: a failed Configure leaves the config as it was;
//   - a rollback puts back only a file that still holds what shimkit
//     wrote; one someone changed since is left as it is, its journal
//     dropped, and the error wraps the config package's ErrConcurrentEdit;
//   - before anything changes, a handler that is the runtime's own
//     (runc, the default runtime, crun on CRI-O; containerd's own shim
//     types without options.BinaryName) is refused (ErrReserved, package
//     ownership), and so is one the node's config defines that shimkit did
//     not write, unless adopted or migrated (ErrConflict);
//   - CRI-O gets only what it has a setting for: sandboxers, migration,
//     adoption and containerd's own fields are refused before anything
//     changes (ErrRuntimeUnsupported), and a restart that would stop every
//     pod of a cgroup v1 node is refused (crioconfig.ErrRestartStopsPods);
//   - a restart is never a SIGHUP; Check waits for RuntimeReady and for
//     each handler present (or gone) within its timeout, else ErrUnhealthy;
//   - detection never guesses between two running runtimes: both sockets
//     and no word from the plan is ErrAmbiguousRuntime.
package runtime
