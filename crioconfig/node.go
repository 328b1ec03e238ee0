package crioconfig

import (
	"errors"
	"io/fs"
	"os"
)

// A CRI-O node's service and socket (CRI-O v1.34: contrib/systemd/
// crio.service, pkg/config CrioSocketPath).
const (
	// Unit is the systemd unit to restart after a change. Restart it;
	// never reload it: its ExecReload sends SIGHUP, after which CRI-O
	// announces a new handler while pods on it fail (cri-o #10202).
	Unit = "crio.service"
	// DefaultSocket is CRI-O's CRI socket.
	DefaultSocket = "/var/run/crio/crio.sock"
)

// Detect reports whether root (a node's root filesystem; "" for this
// machine) is a CRI-O node, and what says so: CRI-O's socket, its config
// file or its drop-in directory, checked in that order. A node with none
// of them is not one (found false, evidence "").
func Detect(root string) (found bool, evidence string, err error) {
	t := Target{Root: root}
	for _, p := range []string{DefaultSocket, t.config(), t.dropInDir()} {
		switch _, err := os.Stat(t.local(p)); {
		case err == nil:
			return true, p, nil
		case !errors.Is(err, fs.ErrNotExist):
			return false, "", err
		}
	}
	return false, "", nil
}
