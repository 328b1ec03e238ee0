// Package crioconfig registers CRI-O runtime handlers in a drop-in file of
// shimkit's own, with the contract of containerdconfig: a change that is
// committed or rolled back byte for byte, ownership records, and refusal
// of what someone else wrote. It is node-side: it imports no Kubernetes
// client and needs no running CRI-O, so an image builder can use it on a
// root filesystem (Target.Root).
//
// # What CRI-O reads (v1.34, checked in its source)
//
// CRI-O decodes /etc/crio/crio.conf (--config), then every file under
// /etc/crio/crio.conf.d (--config-dir), recursively, whatever its name,
// in lexical order (criocli mergeConfig: UpdateFromFile, then
// UpdateFromPath, a filepath.Walk). A later file's
// [crio.runtime.runtimes.NAME] replaces an earlier file's whole table. A
// file that is not TOML stops CRI-O from starting. A handler CRI-O cannot
// use (a runtime_path that does not exist, a vm binary not named
// containerd-shim-*-v2, runtime_config_path on an oci handler, an
// allowed_annotations entry it does not know) is only logged and dropped:
// CRI-O starts without it (RuntimeConfig.ValidateRuntimes).
//
// # Guarantees
//
//   - Every check happens before anything is written (Writer.Install):
//     the handler (RuntimeHandler.Validate: a DNS-label name, runtime_type
//     oci or vm, a vm binary named containerd-shim-<name>-v2, paths clean
//     and absolute, allowed_annotations that CRI-O v1.34 knows, a
//     container_min_memory in CRI-O's syntax), its runtime_path on disk (a
//     regular, executable file) and a vm handler's runtime_config_path
//     (ErrBinary), every file CRI-O reads (valid TOML, ErrParse), and the
//     rendered drop-in, decoded again strictly.
//   - shimkit's handler lives alone in its drop-in,
//     <drop-in dir>/90-shimkit-<handler>.conf (DropInName); no file
//     shimkit did not write is ever edited.
//   - A handler of that name that any other file CRI-O reads defines is
//     refused with ErrForeignHandler, naming the file; so are CRI-O's
//     default runtime and its built-in crun (ErrReserved). Nothing is
//     written.
//   - Ownership: <state dir>/<handler>.owner.json records the owner and
//     the sha256 of the drop-in shimkit wrote. A drop-in without a record,
//     of another owner, or changed since is ErrNotOurs, and stays as it is
//     on Install and Uninstall.
//   - Installing what is there already changes nothing (Changed() ==
//     false), so that CRI-O need not restart; Uninstall removes the
//     drop-in and its record, so install then uninstall leaves the
//     configuration directories as they were.
//   - A Change is journaled (<state dir>/<handler>.journal.json, written
//     and fsynced before any file) and is committed or rolled back:
//     Rollback, and Restore after a crash, put back each file's former
//     bytes while it holds exactly what shimkit wrote; a file someone
//     changed since is left as it is (ErrConcurrentEdit), and the journal
//     stays, refusing new changes of the handler (ErrPending) until
//     Restore succeeds or ForgetPending accepts the files as they are.
//   - Nothing of shimkit's is ever in the drop-in directory but its
//     drop-ins: records, journals and temporary files are in the state
//     directory (/etc/crio/shimkit by default), which must be on the same
//     filesystem and outside the drop-in directory; a drop-in is written
//     as a temporary file there, fsynced, and renamed into place.
//   - Errors wrap exported sentinels (errors.Is) whose exported names
//     Reason returns, and name the file (*FileError).
//
// Reloading: CRI-O must be restarted (Unit, crio.service), never reloaded
// or sent SIGHUP (the unit's ExecReload): after a SIGHUP CRI-O reports a
// new handler in its CRI status while pods on it fail (cri-o #10202).
// This package only writes; the caller restarts CRI-O and checks the
// handler in the CRI status (on DefaultSocket) and with a canary pod.
// Detect finds a CRI-O node by its socket, config file or drop-in
// directory.
//
// # What runs as which kind (seen with CRI-O v1.34.0 here)
//
//   - oci: an OCI runtime run under conmon. Its runtime must accept
//     runtime spec 1.2.1: runc 1.1.5 does; crun 1.8.1 (Debian 12) refuses
//     every container ("unknown version specified").
//   - vm: a containerd shim v2 binary. CRI-O v1.34 dials the address the
//     shim prints on start, so it needs a shim that prints a plain address
//     (containerd 1.x's shim API; Kata's runs in CRI-O's CI): containerd 2.x shims
//     print JSON bootstrap parameters, which CRI-O v1.34 cannot dial.
//     CRI-O keeps the infra container of a vm handler's pods.
//
// HandlerWriter is the role a node installer consumes; Writer is the real
// one.
package crioconfig
