// Package outcome says how a node operation ended and why: the sentinel
// errors of an operation's outcome (rolled back, rollback failed,
// interrupted, canary failed) and the plan.Reason of a failure, read from
// the sentinel errors it wraps.
//
// It guarantees:
//   - Reason maps every sentinel the installer's packages and the packages
//     they use (containerdconfig, crioconfig, fetch, signature, plan)
//     return to one of plan's reason constants, the most specific first: a
//     rollback that met another writer's edit says ConcurrentEdit before
//     anything else, an interruption Interrupted before the cause it cut
//     short;
//   - an error reading or writing a config file is ConfigInvalid;
//   - Reason returns "" when nothing it knows is wrapped, for the caller
//     to classify (the installer: the step that failed, else NodeError).
package outcome
