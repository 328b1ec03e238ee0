// Package installer installs, upgrades and removes a containerd shim on one
// node: the step the Shim proposal spells out — install the shim and its
// config, restart containerd, check that it came back, and if not roll back.
// It composes package fetch (get and verify the artifact) and package
// containerdconfig (register the handler) with a Restarter and a
// HealthChecker. The reference command is shimkit-installer (installer/cli),
// which the operator runs as a privileged Job on each node.
//
// # Guarantees
//
//   - One at a time: a node-wide flock (in the state directory under the
//     host root) serialises installers, so two shims never edit the config
//     or restart containerd at once.
//   - Binaries are placed atomically under BinDir (default /opt/shimkit/bin):
//     fetched into a staging directory on the same filesystem, fsynced, then
//     renamed over the old one. A running shim keeps its file; nothing is
//     ever truncated in place ("text file busy" cannot happen). A link in
//     LinkDir (default /usr/local/bin) lets containerd 1.6, which ignores
//     runtime_path for pod sandboxes, find the shim on its PATH.
//   - Restarts happen only when the config changed. A re-run with the same
//     spec is a no-op; an upgrade that only replaces the binary does not
//     restart containerd either (shims are started per pod).
//   - containerd is restarted through systemd over D-Bus (SystemdRestarter),
//     connecting to the host's systemd private socket or system bus under
//     the host root: no nsenter, nothing installed on the host, never
//     SIGHUP (containerd exits on it). The unit comes from the distribution
//     preset; k0s needs no restart. A unit at its start limit is reset and
//     restarted once more.
//   - Health is checked over CRI on the host's containerd socket
//     (CRIHealth): RuntimeReady, and the handler registered (runtimeHandlers
//     on containerd 2.x, the verbose config on 1.x) within a timeout.
//   - Failure rolls back: the config is restored byte for byte, the binary
//     restored or removed, a failed unit reset, containerd restarted and
//     checked again. The error wraps ErrRolledBack, or ErrRollbackFailed
//     when restoring failed too.
//   - Crash safe: the intent is recorded in the state file before anything
//     changes, config backups stay until commit, and a run that finds an
//     interrupted operation restores it first. Killing the installer at any
//     point and running it again converges.
//   - Uninstall removes the handler first, restarts and checks, and only
//     then removes the binary.
//   - Offline mode installs into a root filesystem with no restart and no
//     health check, for image builders.
package installer
