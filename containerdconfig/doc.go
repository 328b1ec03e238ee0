// Package containerdconfig registers containerd runtime handlers without
// losing a byte of the user's configuration, for every containerd schema
// (versions 1 to 4) and for the layouts of the common Kubernetes
// distributions.
//
// # Guarantees
//
//   - Parsing uses go-toml/v2; the schema version (a missing version is 1),
//     imports, handlers and default runtime are read from the decoded file,
//     never guessed from text.
//   - What shimkit adds sits between marker comments
//     ("# >>> shimkit: runtime handler "spin" ... >>>"). Everything outside
//     the markers stays byte for byte: comments, key order, quoting, blank
//     lines, CRLF line endings.
//   - Adding a handler that is already there with identical settings changes
//     nothing and reports Changed() == false, so the caller does not restart
//     containerd. A handler shimkit added before is updated in place.
//   - Removing a handler removes exactly its managed block, so add then
//     remove gives back the original bytes. A handler shimkit did not write
//     is never removed.
//   - Every edit is parsed again before anything is written, and must keep
//     every other setting with the same value. Bad input (invalid TOML, a
//     handler name that is not a DNS label, a template shimkit does not
//     understand, an edit that would collide with other tables) returns a
//     *FileError naming the file, line and key, wrapping a sentinel error
//     (ErrParse, ErrInvalidHandler, ErrInvalidProxyPlugin, ErrTemplate,
//     ErrConflict, ...), and no file is touched.
//   - Files are written atomically (temporary file in the same directory,
//     fsync, mode and owner kept, rename, fsync of the directory).
//
// # Ownership: what someone else wrote stays theirs
//
// shimkit runs as root on every node, so it never takes over, overwrites,
// restores over or deletes a handler or file that someone else wrote, or
// changed after shimkit did.
//
//   - A handler the edited file defines outside a shimkit block (an admin's,
//     another tool's) is refused by AddHandler and Install, whether its
//     settings are the ones asked for or not: a *FileError wrapping
//     ErrConflict names the file, line and key. So is a handler that a file
//     containerd merges with a drop-in defines (the root config, another
//     drop-in): the drop-in would take it over.
//   - Adoption is asked for explicitly (AdoptHandler, Install.Adopt). The
//     handler's tables are replaced where they are by a block marked
//     "adopted by shimkit" that keeps their text as comment lines
//     ("#| ..."), line endings and a missing final newline included, so
//     that removing the handler puts that text back byte for byte. Forms
//     that cannot be put back exactly (inline tables, dotted keys, tables in
//     separate places of the file) are refused with ErrConflict.
//   - A migration the caller asked for may remove another installer's
//     handler (EvictHandler, Evict): only when the caller's Match
//     recognises the table as that installer's (runtime-class-manager's
//     runtime_type is its binary's path), with that installer's marker
//     comment above it; anything else is ErrConflict.
//   - A Change is undone by compare and swap. Change.Rollback (and Restore
//     after a crash) puts a file's original bytes back only while the file
//     holds exactly what shimkit wrote; a file the Change created is then
//     removed. When someone else changed the file since, only the shimkit
//     blocks the Change touched are undone, each only while it is byte for
//     byte what the Change wrote (found by its marker id, on the masked
//     text of a template): an appended block is cut, an updated one gets
//     its former bytes, an adopted one the handler's original text, a
//     removed one is written again; the result must parse and hold the
//     original values where the Change changed something and the other
//     writer's everywhere else. When that is not possible (a block was
//     edited, the file is gone or no longer parses, a file the Change
//     removed was written again), the file is left exactly as it is and
//     the error is a *FileError naming it that wraps ErrConcurrentEdit. In
//     every case the other writer's edit survives. A block the Change added,
//     or a file it created, that someone removed stays removed.
//
// # Files next to the config while a change is pending
//
// Before a Change writes a file, it records in <file>.shimkit-journal
// (mode 0600; the name does not end in .toml, so import globs never match
// it), written atomically and fsynced, whether the file existed, what it
// held and what the Change writes. Several Changes of one file in one
// operation share the journal, which so holds the oldest original and the
// newest written bytes. Commit drops the Change's record, and the journal
// with its last one; Rollback does the same once the file is undone.
// Restore(path) undoes what a crash left pending with the rule above and
// removes the journal; when another writer's edit stands in the way it
// leaves file and journal alone and returns ErrConcurrentEdit, and a new
// Change of the file is refused until Restore succeeds (once someone fixed
// the file) or ForgetPending accepts the file as it is. The other files are
// transient: .<file>.shimkit-tmp-* while a file is being replaced. shimkit
// no longer writes <file>.shimkit-backup; Restore still puts back one that
// an older version left.
//
// # Proxy plugins and sandboxers
//
// Sandboxer shims (Kuasar, runwasi) run a long-lived sandbox controller
// daemon that containerd 2.x reaches as a proxy plugin, a top-level
// [proxy_plugins.<name>] table in every schema version, with type
// "sandbox" and the daemon's socket as address; the handler then sets
// sandboxer = "<name>" (RuntimeHandler.Sandboxer) and usually io_type =
// "streaming" (RuntimeHandler.IOType). InstallProxyPlugin and
// UninstallProxyPlugin add and remove such a plugin with the same
// guarantees as handlers: a marker block ("# >>> shimkit: proxy plugin
// "vmm" ... >>>"), everything else byte for byte, the result parsed again
// and every other setting kept, identical = no-op, removal = the exact
// inverse, a drop-in of its own (shimkit-proxy.<name>.toml) on schema 3 and
// up, the config file otherwise. Unlike a handler, a proxy plugin of that
// name that shimkit did not write is never taken over, in the edited file
// or in a file containerd merges with it (the root config, the other
// drop-ins): when it differs from the one asked for, Apply returns an error
// wrapping ErrConflict that names the file and the plugin, and touches
// nothing; when it is the same, nothing changes (it stays theirs). Changes
// of proxy plugins are journaled and undone like those of handlers.
//
// # Where the handler goes
//
// Schemas 1 and 2 are containerd 1.x (CRI plugin "cri" and
// "io.containerd.grpc.v1.cri"); 3 and 4 are containerd 2.x
// ("io.containerd.cri.v1.runtime"). On 1.x, defining any runtime drops the
// built-in runc, so a file that does not define runc gets a second managed
// block that keeps it, removed with the last shimkit handler.
//
// With containerd 2.x (schema 3 and up), when the root config imports a
// directory (2.2+ default configs import /etc/containerd/conf.d/*.toml),
// the handler goes to its own drop-in, shimkit-<handler>.toml, whose version
// equals the root's: a higher one makes containerd 2.3.0–2.3.4 refuse to
// start and 2.0–2.2 skip migrating the root. containerd 1.x replaces whole
// plugin sections from drop-ins, so there the root file is edited. Mode
// overrides the choice.
//
// # Distributions
//
// A Preset names the files of a distribution and the systemd units that
// restart containerd. Detect checks them in a fixed order (k3s, RKE2,
// MicroK8s, k0s, then plain containerd); PresetNamed is the explicit
// override.
//
//   - containerd (kind, minikube, kubeadm, AKS, EKS, GKE):
//     /etc/containerd/config.toml, unit containerd. A missing file is created
//     and deleted again with the last handler.
//   - k3s and RKE2 render config.toml from config.toml.tmpl (or
//     config-v3.toml.tmpl for containerd 2) on every start. shimkit never
//     edits the rendered file and never copies it into the template: it
//     writes a drop-in into config.toml.d (config-v3.toml.d) when the rendered
//     config imports it, and otherwise edits or creates a template that keeps
//     {{ template "base" . }}. A handler the distribution already generates
//     is left alone (no-op when identical, ErrConflict otherwise); one the
//     user wrote in the template is refused, or adopted when asked for.
//     k3s renders the template with Go's text/template, so a string shimkit
//     writes there that holds "{{" is a basic string with each '{' escaped
//     (\u007B): k3s renders no action from it and containerd reads the
//     value exactly. A template that replaces the distribution's config
//     (no {{ template "base" . }} line) or has actions inside TOML lines is
//     valid but not edited: ErrTemplate. k3s and RKE2 also render a runtime
//     table of their own for each shim they find on their PATH
//     (Preset.GeneratesRuntimeFor: containerd-shim-spin-v2, the wasm
//     shims, crun, nvidia): the installer does not put such a shim there.
//     A removal (Uninstall) works even when the rendered config does not
//     parse: it edits shimkit's drop-in or the template, which repairs a
//     config k3s rendered with a table twice.
//   - MicroK8s: /var/snap/microk8s/current/args/containerd-template.toml,
//     unit snap.microk8s.daemon-containerd.
//   - k0s: a drop-in in /etc/k0s/containerd.d; k0s reloads it, no restart.
//
// The package imports nothing from Kubernetes clients and needs no running
// containerd, so image builders can use it offline on a root filesystem
// (Target.Root).
package containerdconfig
