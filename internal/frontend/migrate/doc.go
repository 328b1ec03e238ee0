// Package migrate takes a cluster over from runtime-class-manager
// (spinframework's, and its KWasm era): Convert maps one of its Shims
// (runtime.spinkube.dev/v1alpha1 or runtime.kwasm.sh/v1alpha1) to the
// shimkit Shim that replaces it, with spec.migrateFrom naming it, and Run
// is the command shimkit-operator migrate, which prints those Shims (the
// default) or creates them (--apply).
//
// The operator does the rest (see package operator): it takes the
// RuntimeClass over before anything else, installs each node that
// runtime-class-manager provisioned with plan.Migration (one containerd
// restart, runtime-class-manager's handler, binary and lock file entry
// replaced), and removes runtime-class-manager's node label once the node
// is installed.
package migrate
