package fleet

// Skip says why a node that matches the selector cannot run the shim.
type Skip struct {
	// Reason is one of v1alpha1.SkipNotLinux, SkipNotContainerd,
	// SkipNoArtifact.
	Reason string
	// Detail says what the node has instead ("windows", "cri-o://1.31.0",
	// "linux/riscv64").
	Detail string
}
