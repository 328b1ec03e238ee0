package crioconfig

import (
	"errors"
	"testing"
)

// TestCheckRestart: a restart of CRI-O is refused only where it would
// stop every pod, cgroupfs on a cgroup v1 host, naming the file that sets
// it; the last file that sets cgroup_manager wins, as in CRI-O.
func TestCheckRestart(t *testing.T) {
	const vendor, admin = "/etc/crio/crio.conf.d/10-crio.conf", "/etc/crio/crio.conf.d/20-admin.conf"
	for _, c := range []struct {
		name     string
		files    map[string]string
		cgroupV1 bool
		file     string // the file named by the refusal; "" when allowed
	}{
		{"default on v1", nil, true, ""},
		{"cgroupfs on v2", map[string]string{vendor: "[crio.runtime]\ncgroup_manager = \"cgroupfs\"\n"}, false, ""},
		{"cgroupfs on v1", map[string]string{vendor: "[crio.runtime]\ncgroup_manager = \"cgroupfs\"\n"}, true, vendor},
		{"systemd over cgroupfs", map[string]string{vendor: "[crio.runtime]\ncgroup_manager = \"cgroupfs\"\n", admin: "[crio.runtime]\ncgroup_manager = \"systemd\"\n"}, true, ""},
		{"cgroupfs over systemd", map[string]string{vendor: "[crio.runtime]\ncgroup_manager = \"systemd\"\n", admin: "[crio.runtime]\ncgroup_manager = \"cgroupfs\"\n"}, true, admin},
	} {
		t.Run(c.name, func(t *testing.T) {
			n := newNode(t)
			for f, data := range c.files {
				n.write(f, data, 0o644)
			}
			snap, err := Scan(n.tg)
			if err != nil {
				t.Fatal(err)
			}
			err = snap.CheckRestart(c.cgroupV1)
			var fe *FileError
			switch {
			case c.file == "" && err != nil:
				t.Fatalf("CheckRestart = %v, want nil", err)
			case c.file != "" && (!errors.Is(err, ErrRestartStopsPods) || !errors.As(err, &fe) || fe.Path != c.file || Reason(err) != ReasonRestartStopsPods):
				t.Fatalf("CheckRestart = %v, want ErrRestartStopsPods naming %s", err, c.file)
			}
		})
	}
}
