// Package nodegate is the operator's node gate: at most one installer Job
// runs on a node at any moment, across all Shims, so that two Shims never
// restart one node's container runtime back to back or interleaved; with
// a cap, at most that many nodes run one at once, whatever each Shim's
// maxUpdate. It learns the running Jobs from the Jobs cache (after an
// operator restart too) and keeps a hold the cache does not show yet for
// Grace.
//
// It also batches installs across Shims: each Shim offers the nodes it
// would install now and how many more it may start; the Shim that starts
// a node's Job claims the other offers of that node (one slot of each
// partner's budget), so that one installer run installs them all with one
// restart. A completed batch gives every member its slot back.
//
// The Gate is safe for concurrent use and holds no client: the reconciler
// tells it what it reads (Sync); a reconcile decides on its copy (Read,
// a View) and its executor commits what the plan reserved (Reserve).
package nodegate
