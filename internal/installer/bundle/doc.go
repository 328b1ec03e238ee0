// Package bundle keeps the Shims' bundles on a node: each Shim's directory
// under the bundle root holds a directory per version and a "current"
// link to the installed one, which the plans' $(BUNDLE_DIR) resolves to.
// It lays a bundle out in staging from a fetched artifact, places it and
// switches the link, prunes old versions, sweeps what a dead run left,
// compares a bundle with its record (drift), and keeps the PATH links
// that containerd 1.6 needs to find a shim by name.
//
// It guarantees:
//   - a version is named by the artifact's digest and the plan's files
//     (Version); a drifted version is laid out again beside the one in use
//     (<version>-repair), never over it;
//   - only the files the plan names leave staging, with exactly the plan's
//     modes, placeholders substituted where asked, each synced; a file the
//     artifact lacks, or a pattern matching several, fails before the node
//     is touched (ErrMissingFile);
//   - "current" is switched with one rename of a new link over the old one,
//     the directory synced: containerd and new pods see the old bundle or
//     the new one, never a mix; Restore switches it back and removes the
//     version an operation added; nothing is truncated in place;
//   - nothing outside the bundle root is removed (Remove), and a PATH link
//     is removed only when it still points where shimkit pointed it;
//   - a PATH link is made only where no file of that name is on
//     containerd's PATH: a taken name is skipped where containerd honours
//     runtime_path, else a conflict (ErrConflict, package ownership);
//     containerd's own shims are never linked, nor a binary the
//     distribution renders a runtime table of its own for;
//   - Drift only reads.
package bundle
