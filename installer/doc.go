// Package installer carries out node plans (package installer/plan) on one
// node: install, upgrade and remove a Shim — a bundle of files, the runtime
// handlers it serves and the sandboxer daemons it runs — then restart
// containerd, check that it came back, and if not roll back. It composes
// package fetch (get and verify the artifact) and package containerdconfig
// (register handlers and proxy plugins) with a Restarter, a HealthChecker
// and a UnitManager. The reference command is shimkit-installer
// (installer/cli), which the operator runs as a privileged Job on each
// node, handing it the plan as a file.
//
// # Steps
//
// An operation is a list of small steps, each in its own file with its own
// undo: stageBundle (fetch, verify and lay the bundle out in staging),
// configure (handlers and proxy plugins), placeBundle (switch the Shim's
// "current" link), linkShims (PATH links for containerd 1.6),
// startSandboxers (units), restartContainerd (restart and CRI check) and
// commitInstall; uninstall is unconfigure, restartContainerd, removeFiles.
// When a step fails, it and every step before it are undone in reverse and
// containerd is restarted once more if it may have seen the change.
//
// # Guarantees
//
//   - One at a time: a node-wide flock (in the state directory under the
//     host root) serialises installers, so two Shims never edit the config
//     or restart containerd at once.
//   - Bundles are versioned and switched atomically: each Shim has
//     <BundleRoot>/<shim>/<version>/ (version: a hash of the artifact digest
//     and the file list) and a "current" symlink, replaced with one rename.
//     $(BUNDLE_DIR) in handler options, runtime paths, sandboxer commands and
//     substituted files resolves to <BundleRoot>/<shim>/current, so an
//     upgrade that changes only files changes no config and restarts
//     nothing. A rollback switches the link back; old versions are removed
//     after commit; a running shim keeps its (unlinked) file. Nothing is
//     ever truncated in place. Two Shims never share a file.
//   - Files get exactly the plan's modes; only files the plan names leave
//     staging; a bundle file the artifact lacks fails the install before
//     the node is touched (ErrMissingFile).
//   - A config that cannot be edited safely fails the install before
//     anything on the node changed (the config is edited first, in memory,
//     checked, and only then written).
//   - Restarts happen only when the config changed. A re-run of the same
//     plan is a no-op.
//   - containerd is restarted through systemd over D-Bus (SystemdRestarter),
//     never with SIGHUP (containerd exits on it). Sandboxer units are written
//     under UnitDir, enabled, and (re)started before containerd; they are
//     stopped and removed only after containerd runs without their proxy
//     plugins.
//   - Health is checked over CRI (CRIHealth): RuntimeReady, and every
//     handler registered (or gone) within the plan's timeout.
//   - Failure rolls back: the config byte for byte, the bundle link, links
//     and units; containerd restarted and checked again. The error wraps
//     ErrRolledBack, or ErrRollbackFailed. Report turns any outcome into a
//     plan.NodeResult whose Reason is one of plan's constants.
//   - Crash safe: each step records its intent in the state file before it
//     changes the node, config and unit backups stay until commit, and a run
//     that finds an interrupted operation undoes it first. Killing the
//     installer at any point and running it again converges.
//   - containerd's own shims (containerd-shim-runc-v1/v2, runhcs) are never
//     linked, and the handler runc is refused (ErrReserved).
//   - Offline mode installs into a root filesystem with no restart, no
//     health check and no unit started, for image builders.
package installer
