// Package jobview names installer Jobs and reads them: the operations a
// Job runs, the labels and annotations the operator puts on Jobs (and
// RuntimeClasses), their names, the members of a Job that carries several
// Shims' plans, and what a Job says about its node's operation (View:
// running, succeeded, failed and why, from its conditions and the
// installer's NodeResult).
//
// It is pure (no client): package decide decides from Views, package
// nodejob creates the Jobs they read. Names are stable: a Job's name is a
// function of the Shim, the node, the operation and the spec hash
// (JobName), and label values longer than a label allows are shortened
// with a hash suffix (LabelValue), so keys stay valid and distinct.
package jobview
