// Package migrate takes a handler over from runtime-class-manager (and its
// KWasm era): it recognises the handler tables that installer wrote in
// containerd's config, so that they are evicted in the same edit that
// registers the Shim's handler, and removes what it left on the node once
// the Shim's install is committed.
//
// It guarantees:
//   - a table is runtime-class-manager's only when its runtime_type is the
//     absolute path of that installer's binary for the handler (FromRCM);
//     a handler of that name it did not write is not evicted;
//   - after commit, its binary goes only when its lock file's sha256 still
//     matches (else ErrConflict from package ownership, and it stays), then
//     its lock entry, then the lock file and its directories when empty;
//   - nothing else of the node is touched.
package migrate
