// Package installer carries out node plans (package installer/plan) on one
// node: install, upgrade and remove a Shim — a bundle of files, the runtime
// handlers it serves and the sandboxer daemons it runs — then restart the
// node's container runtime, check that it came back, and if not roll back.
// It composes package fetch (get and verify the artifact) with a Runtime
// (containerd's, through package containerdconfig, or CRI-O's, through
// package crioconfig) and a UnitManager. The reference command is
// shimkit-installer (installer/cli), which the operator runs as a
// privileged Job on each node, handing it the plan as a file.
//
// # The runtime is a role
//
// What differs between containerd and CRI-O is one small interface,
// Runtime: write the handlers' config as a change that is committed or
// rolled back byte for byte (Configure, a ConfigChange), restart, check
// health. Its containerd implementation edits the config the preset names
// (containerdconfig), restarts the preset's unit through a Restarter and
// checks with a HealthChecker; its CRI-O implementation writes a drop-in of
// shimkit's own per handler (crioconfig: the TOML and the binary's path and
// name checked before anything is written, since CRI-O drops a bad handler
// silently; journaled; refusing a handler someone else defines), restarts
// crio.service through systemd (never SIGHUP: after one CRI-O announces a
// handler whose pods fail, cri-o #10202), then requires the handler in the
// CRI status. A plan's handler is written in containerd's terms; on CRI-O an
// OCI runtime under containerd's runc shim (options.BinaryName) is an oci
// handler of that binary, any other runtime type a vm handler of its
// runtimePath (a containerd-shim-*-v2), and settings carry CRI-O's
// allowed_annotations and container_min_memory; what CRI-O has no setting
// for (sandboxers, snapshotter, pod annotations, migration) is refused
// before anything changes (ErrRuntimeUnsupported). The runtime is chosen
// per node: Installer.Runtime (installertest.FakeRuntime, the in-memory one of tests),
// else the plan's runtime (plan.RuntimeContainerd, plan.RuntimeCRIO), else
// containerd when the Installer names a Preset or Mode, else detection: a
// containerd distribution's layout, else CRI-O's socket, config file or
// drop-in directory (crioconfig.Detect), else containerd; both runtimes'
// sockets and no word from the plan is ErrAmbiguousRuntime. The steps
// (fetch, bundle, links, units, state, canary) are the same on both; PATH
// links are made only for a runtime that looks shims up on its PATH
// (containerd 1.6). This package keeps the public operations, the step
// engine and the node's state; each concern the steps call on is a package
// of its own under internal/installer (runtime, systemd, units, bundle,
// source, drift, ownership, migrate, layout, statefile, outcome), no type
// over 15 methods (TestTypeSizes).
//
// # Steps
//
// An operation is a list of small steps, each with its own undo: preflight
// (ownership and reserved names, before anything changes), verifyArtifact
// (the signature), stageBundle (fetch and lay the bundle out in staging),
// configure (handlers and proxy plugins), placeBundle (switch the Shim's
// "current" link), linkShims (PATH links for containerd 1.6),
// startSandboxers (units), restartRuntime (restart and CRI check),
// runCanary (the plan's canary pod, through Installer.Canary) and
// commitInstall; uninstall is uninstallCheck, unconfigure, unlinkDetected,
// restartRuntime, removeFiles. Verify has no steps: it only reads. When a
// step fails, it and every step before it are undone in reverse and
// containerd is restarted once more if it may have seen the change.
//
// # Guarantees
//
//   - A read-only host is found before anything changes (the node lock
//     included): an install whose config directory, bundle root, state,
//     link or unit directory (or its nearest existing parent) is on a
//     read-only filesystem, or whose bundle root is mounted noexec, fails
//     with ErrReadOnlyHost (ReadOnlyHost, a refusal) naming it. BundleRoot
//     and LinkDir move the bundles and the links to directories that are
//     writable and executable (COS: /home/kubernetes/bin).
//   - One at a time: a node-wide flock (in the state directory under the
//     host root) serialises installers, so two Shims never edit the config
//     or restart containerd at once.
//   - Bundles are versioned and switched atomically: each Shim has
//     <BundleRoot>/<shim>/<version>/ (version: a hash of the artifact digest
//     and the file list) and a "current" symlink, replaced with one rename.
//     $(BUNDLE_DIR) in handler options, runtime paths, sandboxer commands and
//     substituted files resolves to <BundleRoot>/<shim>/current, so an
//     upgrade that changes only files changes no config and restarts
//     nothing. A rollback switches the link back; an old version stays
//     while a ready sandbox created while it was current runs, then goes;
//     a handler a ready sandbox uses is never removed (ErrHandlerInUse).
//     Nothing is ever truncated in place. Two Shims never share a file.
//   - Files get exactly the plan's modes; only files the plan names leave
//     staging; a bundle file the artifact lacks fails the install before
//     the node is touched (ErrMissingFile).
//   - A config that cannot be edited safely fails the install before
//     anything on the node changed (the config is edited first, in memory,
//     checked, and only then written).
//   - Restarts happen only when the config changed. A re-run of the same
//     plan on a node as recorded is a no-op.
//   - Drift is found and repaired. The record keeps the sha256 of every
//     bundle file as placed (FileDigests). Verify, strictly read-only (the
//     node lock taken shared; nothing written, recovered, restarted or
//     fetched), compares the node with the record and the record with a
//     verify plan: spec hash, pinned digest, each file's presence, bytes
//     and mode, the "current" and PATH links, the handlers in containerd's
//     config, the units; one Drift entry per mismatch. An install of the
//     same spec compares the same way first and repairs what drifted: a
//     bundle that is not as placed is fetched and laid out again beside the
//     drifted version (<version>-repair) and "current" switched to it, as
//     for an upgrade (no restart; running shims keep their files); a
//     handler gone from the config is written again, with one restart; a
//     missing unit or link is put back. A unit someone edited stays a
//     Conflict. Result.Drift says what was repaired.
//   - Several Shims, one restart: InstallAll runs each step for every plan
//     before the next step (every config is edited before any bundle is
//     placed), restarts containerd once when any config changed and checks
//     every plan's handlers, runs each canary, then commits each plan. A
//     failure before the commits rolls every plan back with one more
//     restart; a committed plan stays. A crash leaves one pending record
//     per Shim in the state, undone newest first by the next operation.
//   - containerd is restarted through systemd over D-Bus (SystemdRestarter),
//     never with SIGHUP (containerd exits on it). The unit restarted is the
//     preset's unit that runs containerd (k3s or k3s-agent; on an RKE2
//     agent installed from the tarball rke2-agent, never the merely loaded
//     rke2-server). Sandboxer units are written
//     under UnitDir, enabled, and (re)started before containerd; they are
//     stopped and removed only after containerd runs without their proxy
//     plugins.
//   - Health is checked over CRI (CRIHealth): RuntimeReady, and every
//     handler registered (or gone) within the plan's timeout. Then, when
//     the plan has a canary and the node changed, a pod must run with the
//     handler to a zero exit (Installer.Canary; package canarypod has
//     kubelet run it) before the install commits; otherwise everything is
//     rolled back (ErrCanaryFailed, reason CanaryFailed).
//   - Failure rolls back: the config byte for byte, the bundle link, links
//     and units; containerd restarted and checked again. The error wraps
//     ErrRolledBack, or ErrRollbackFailed. Report turns any outcome into a
//     plan.NodeResult whose Reason is one of plan's constants.
//   - Crash safe: each step records its intent in the state file before it
//     changes the node, config and unit backups stay until commit, and a run
//     that finds an interrupted operation undoes it first (files it created
//     removed, files of others untouched) and sweeps dead staging
//     directories. Killing the installer at any point and running it again
//     converges.
//   - Own only what it wrote. The state records, per Shim (name and UID),
//     the handlers, proxy plugins, units, links and files it wrote, and the
//     digest of each unit file. Before anything changes, an install is
//     refused (ErrConflict, reason Conflict, naming the handler, file or
//     Shim) when a handler or proxy plugin or unit belongs to another Shim,
//     when the node's config already defines the handler and the plan does
//     not adopt it, or when a unit file of that name is not shimkit's or was
//     edited since; an uninstall refuses to remove an edited unit. An
//     adopted handler is put back byte for byte on uninstall.
//   - Migration (plan.Migrate, from runtime-class-manager): the other
//     installer's handler table is evicted and the Shim's registered in the
//     same operation, with one containerd restart; after commit its binary
//     (only if its lock file's sha256 still matches) and lock entry go, and
//     its directories when empty. A failure rolls back to its node as it
//     was; a handler of that name it did not write is a Conflict.
//   - Reserved names (ErrReserved, reason Reserved): the handler runc, the
//     node's default runtime, and the runtime types of containerd's own shims
//     (io.containerd.runc.v1/v2, io.containerd.runhcs.v1) unless the handler
//     runs its own OCI runtime under containerd's shim (options.BinaryName).
//     containerd's own shim binaries are never linked.
//   - PATH links only where nothing is: a shim binary is linked into LinkDir
//     only when no file of that name is on containerd's PATH, so nothing an
//     admin or another Shim put there is replaced or shadowed. containerd
//     1.7 and later honour runtime_path and need no link; on 1.6 (asked over
//     CRI) a taken name is a Conflict. On k3s and RKE2 a shim k3s
//     auto-detects on its PATH (containerd-shim-spin-v2, the wasm shims) is
//     not linked at all: k3s would render its own runtime table for it, a
//     second one where the handler goes to a template.
//   - A drop-in directory shimkit created (config-v3.toml.d on current k3s)
//     is recorded in the state and removed once empty; one that was there
//     before stays. A k3s template shimkit will not edit (a full custom
//     one) is refused as ConfigNotEditable.
//   - Compare-and-swap undo: a rollback or a recovery puts back a file only
//     when it still holds what shimkit wrote; a file someone changed since is
//     left as it is (ErrConcurrentEdit, reason ConcurrentEdit).
//   - SIGTERM cancels the operation's context: the step in progress stops
//     and everything is rolled back (reason Interrupted) within
//     plan.Restart.RollbackTimeout, so a pod whose grace period is
//     plan.Restart.GracePeriod is never killed half-way.
//   - Offline mode installs into a root filesystem with no restart, no
//     health check and no unit started, for image builders.
package installer
