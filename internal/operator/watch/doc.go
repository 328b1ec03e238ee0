// Package watch is how the Shim reconciler watches the cluster: the
// predicates that pass only the changes a reconcile acts on (a Shim's
// spec, annotations or deletion; a Job that finished; a node's foreign
// labels, its joining or leaving, its system info), so that the
// operator's own writes do not requeue it for nothing, and Store, which
// keeps pointers to the cache's own Nodes and Jobs, fed by the watch's
// event handler before it enqueues, so that a reconcile reads every node
// without a copy and always sees the event that started it.
package watch
