// Package installertest holds in-memory doubles of the roles package
// installer consumes, for unit tests of code that drives an Installer:
// FakeRuntime (a node's container runtime: config, restart, health),
// FakeUnits (systemd units) and FakeSandboxes (the runtime's pod
// sandboxes). Each keeps what matters to a caller and says
// what it is not; the installer's own tests prove the real ones on real
// containerd, CRI-O and systemd.
package installertest
