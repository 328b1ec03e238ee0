// Package statefile keeps the node installer's state file and node lock
// in its state directory.
//
// It guarantees:
//   - the state file is replaced whole (written to a temporary file,
//     synced and renamed), never truncated in place, so a reader sees the
//     state before a write or after it;
//   - the node lock is an flock on a file of the state directory: Lock
//     takes it exclusive (two installers never edit the config or restart
//     the runtime at once), LockShared shared (readers never see an
//     operation half-way and never wait for each other, and create
//     nothing: without a lock file no installer ever ran);
//   - waiting for the lock ends when the context is done, naming the lock.
package statefile
