// Command reaper runs a command and guarantees that nothing it started
// outlives it. make test runs go test under it: when go test -timeout
// fires, the test binary panics and exits without running t.Cleanup, and
// what its tests started (envtest's kube-apiserver and etcd, make and the
// compilers under it) would keep running.
//
//	reaper [-grace 10s] -- CMD ARGS...
//
// The reaper makes itself a child subreaper (PR_SET_CHILD_SUBREAPER), so
// every process orphaned below it is reparented to it rather than to init,
// and starts CMD with its standard input, output and error. It forwards
// SIGINT and SIGTERM to CMD and reaps every child that exits while CMD
// runs, so orphans do not stay zombies.
//
// When CMD exits, every process still descended from the reaper outlived
// it. The reaper prints one line for each to standard error
//
//	reaper: pid 1234 outlived CMD: its command line
//
// sends each SIGTERM (and its process group, unless that is the reaper's
// own), waits up to -grace for them to go, SIGKILLs the rest, reaps them
// and exits 3. Otherwise it exits with CMD's exit code, or 128 plus the
// signal that killed CMD. It exits 2 on a usage error and 127 when CMD
// cannot be started.
package main
