// Package layout says where the node installer's files are on the node,
// and where a node path is on the machine the installer runs on (a
// privileged pod sees the node's / under a host root).
//
// It guarantees:
//   - every node path is resolved under the host root ("/" when none) and
//     back (Local, NodePath), so that a pod and the node itself write the
//     same files;
//   - the defaults are the installer's (DefaultBundleRoot, DefaultLinkDir,
//     DefaultStateDir, DefaultUnitDir); LinkDir "-" means no PATH links;
//   - a Shim's bundle is <BundleRoot>/<shim>, its installed version behind
//     the link CurrentLink, which the plans' $(BUNDLE_DIR) stands for;
//   - CheckWritable finds, before anything changes, a directory the
//     installer must write that is on a read-only filesystem, or one whose
//     binaries must run that is mounted noexec (ErrReadOnlyHost, naming it);
//     it only reads.
package layout
