package testutil

import (
	"context"
	"fmt"
	"net"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The cluster's network: a bridge on this machine that every node joins
// with a veth pair from its own network namespace, as machines on one L2
// segment. The API server listens on the bridge's address (its serving
// certificate names it), and so do the test's file servers and registries.
const (
	clusterBridge = "shimkit0"
	// clusterSubnet is /24; the bridge is .1, node i is .(10+i).
	clusterSubnet = "10.213.0."
)

// clusterHostIP is the bridge's address, this machine's address for nodes.
const clusterHostIP = clusterSubnet + "1"

// startBridge creates the cluster's bridge (removing one a crashed run
// left) and deletes it in t.Cleanup, after the nodes are gone.
func startBridge(t testing.TB) {
	t.Helper()
	removeLink(clusterBridge)
	for _, args := range [][]string{
		{"link", "add", clusterBridge, "type", "bridge"},
		{"addr", "add", clusterHostIP + "/24", "dev", clusterBridge},
		{"link", "set", clusterBridge, "up"},
	} {
		if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
			removeLink(clusterBridge)
			t.Fatalf("ip %s: %v %s", strings.Join(args, " "), err, out)
		}
	}
	t.Cleanup(func() { removeLink(clusterBridge) })
}

// freePort returns a port free on host now (envtest picks ports on
// loopback only).
func freePort(host string) (string, error) {
	l, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		return "", err
	}
	defer func() { _ = l.Close() }()
	return strconv.Itoa(l.Addr().(*net.TCPAddr).Port), nil
}

// nodeIP is the address of the cluster's i-th node.
func nodeIP(i int) string { return clusterSubnet + strconv.Itoa(10+i) }

// plugNode gives node i's network namespace an eth0 on the bridge, with
// its address and a default route through this machine.
func plugNode(n *Node, i int) error {
	host := "skn" + strconv.Itoa(i)
	removeLink(host)
	steps := [][]string{
		{"ip", "link", "add", host, "type", "veth", "peer", "name", "eth0", "netns", strconv.Itoa(n.Pid)},
		{"ip", "link", "set", host, "master", clusterBridge, "up"},
	}
	in := []string{"nsenter", "-t", strconv.Itoa(n.Pid), "-n", "--"}
	for _, args := range [][]string{
		{"ip", "addr", "add", nodeIP(i) + "/24", "dev", "eth0"},
		{"ip", "link", "set", "eth0", "up"},
		{"ip", "route", "add", "default", "via", clusterHostIP},
	} {
		steps = append(steps, append(append([]string{}, in...), args...))
	}
	for _, s := range steps {
		if out, err := exec.Command(s[0], s[1:]...).CombinedOutput(); err != nil {
			return fmt.Errorf("%s: %w %s", strings.Join(s, " "), err, out)
		}
	}
	return waitReachable(n, clusterHostIP)
}

// waitReachable waits until the node reaches addr over the bridge (the
// new port forwards at once, ARP takes a moment).
func waitReachable(n *Node, addr string) error {
	l, err := net.Listen("tcp", net.JoinHostPort(addr, "0"))
	if err != nil {
		return err
	}
	defer func() { _ = l.Close() }()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	probe := fmt.Sprintf("exec 3<>/dev/tcp/%s/%d", addr, l.Addr().(*net.TCPAddr).Port)
	var out []byte
	for ctx.Err() == nil {
		if out, err = exec.CommandContext(ctx, "nsenter", "-t", strconv.Itoa(n.Pid), "-n", "--", "bash", "-c", probe).CombinedOutput(); err == nil {
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("node does not reach %s: %w %s", addr, err, out)
}
