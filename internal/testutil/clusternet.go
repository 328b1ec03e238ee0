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

// waitOnlineFiles make a cluster node's network-online.target wait for
// its default route, as systemd-networkd-wait-online does on a machine:
// the harness plugs the network (plugNode) just after the node's init
// starts, and a unit ordered after network-online.target (an install at
// boot) must find it there.
var waitOnlineFiles = map[string][]byte{
	"/etc/systemd/system/wait-default-route.service": []byte(`[Unit]
Description=Wait for the default route (the test harness plugs the network as the node boots)
DefaultDependencies=no
Before=network-online.target

[Service]
Type=oneshot
RemainAfterExit=yes
TimeoutStartSec=60
ExecStart=/bin/sh -c 'until grep -q "^eth0[[:space:]]00000000" /proc/net/route; do sleep 0.1; done'
`),
	"/etc/systemd/system/network-online.target.d/10-wait-default-route.conf": []byte("[Unit]\nWants=wait-default-route.service\nAfter=wait-default-route.service\n"),
}

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
