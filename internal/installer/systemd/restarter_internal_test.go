package systemd

import (
	"errors"
	"testing"
)

// TestPickUnit: the unit restarted is the one that runs containerd. An
// RKE2 agent installed from the tarball has rke2-server.service loaded
// too (inactive): it is never picked, whatever the order of Units.
func TestPickUnit(t *testing.T) {
	server := func(rank int, pid uint32) candidate {
		return candidate{name: "rke2-server.service", rank: rank, mainPID: pid}
	}
	agent := func(rank int, pid uint32) candidate {
		return candidate{name: "rke2-agent.service", rank: rank, mainPID: pid}
	}
	for _, tt := range []struct {
		name    string
		loaded  []candidate
		parents []uint32
		want    string
		err     error
	}{
		{name: "agent running, server merely loaded", loaded: []candidate{server(0, 0), agent(2, 40)}, want: "rke2-agent.service"},
		{name: "server running", loaded: []candidate{server(2, 30), agent(0, 0)}, want: "rke2-server.service"},
		{name: "agent failed (a restart it did not survive)", loaded: []candidate{server(0, 0), agent(1, 0)}, want: "rke2-agent.service"},
		{name: "running beats failed", loaded: []candidate{server(1, 0), agent(2, 40)}, want: "rke2-agent.service"},
		{name: "both running: containerd's parent", loaded: []candidate{server(2, 30), agent(2, 40)}, parents: []uint32{40}, want: "rke2-agent.service"},
		{name: "both running, parent unknown: the first", loaded: []candidate{server(2, 30), agent(2, 40)}, want: "rke2-server.service"},
		{name: "one loaded, stopped: it", loaded: []candidate{{name: "containerd.service"}}, want: "containerd.service"},
		{name: "none runs", loaded: []candidate{server(0, 0), agent(0, 0)}, err: ErrNoUnit},
		{name: "none loaded", err: ErrNoUnit},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := pickUnit(tt.loaded, tt.parents, []string{"rke2-server", "rke2-agent"})
			if got != tt.want || !errors.Is(err, tt.err) || (tt.err == nil) != (err == nil) {
				t.Errorf("pickUnit = %q, %v; want %q, %v", got, err, tt.want, tt.err)
			}
		})
	}
}
