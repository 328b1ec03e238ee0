package crioconfig

// defaultCgroupManager is CRI-O v1.34's cgroup_manager when no file sets
// it (pkg/config DefaultConfig).
const defaultCgroupManager = "systemd"

// CgroupManager returns the cgroup manager CRI-O would use, the last
// cgroup_manager set or systemd (CRI-O's default), and the file that
// sets it ("" for the default).
func (s *Snapshot) CgroupManager() (manager, file string) {
	manager = defaultCgroupManager
	for _, src := range s.Sources {
		if src.CgroupManager != "" {
			manager, file = src.CgroupManager, src.Path
		}
	}
	return manager, file
}

// CheckRestart refuses, with ErrRestartStopsPods naming the file, a
// restart of CRI-O that would stop every pod of the node: cgroup_manager
// cgroupfs on a host whose systemd tracks units in cgroup v1 (legacy or
// hybrid). CRI-O moves each conmon into its pod's cgroups through the
// cgroup v1 controllers, never the name=systemd hierarchy, so every
// conmon stays in crio.service's cgroup, and systemd stops them all with
// the service: their containers exit, the installer's own included (seen
// on CRI-O v1.34 under systemd on a cgroup v1 host, where a pod's
// container was stopped and started again by its kubelet). With the
// systemd manager each conmon is in a scope of its own (conmon_cgroup),
// and on cgroup v2 cgroupfs moves it out of the service: a restart leaves
// the pods running.
func (s *Snapshot) CheckRestart(cgroupV1 bool) error {
	manager, file := s.CgroupManager()
	if manager != "cgroupfs" || !cgroupV1 {
		return nil
	}
	return fileErr(file, ErrRestartStopsPods, "cgroup_manager = %q on a cgroup v1 host leaves each conmon in crio.service's cgroup, and shimkit does not restart CRI-O there; "+
		"CRI-O's default cgroup_manager = %q (with the kubelet's cgroupDriver: systemd) keeps the pods running through a restart", manager, defaultCgroupManager)
}
