package testutil

import (
	"context"
	"crypto/rand"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// bootIDFile is the host's file that the node in dir reads as
// /proc/sys/kernel/random/boot_id (nodeboot.sh binds it there).
func bootIDFile(dir string) string { return filepath.Join(dir, "boot_id") }

// newBoot gives the node in dir a new boot ID, a random UUID as the
// kernel's, written in place: the node's bind mount shows the new one.
func newBoot(dir string) error {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		return err
	}
	uuid := fmt.Sprintf("%x-%x-%x-%x-%x\n", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
	return os.WriteFile(bootIDFile(dir), []byte(uuid), 0o644)
}

// BootID is the node's boot ID now.
func BootID(t testing.TB, n *Node) string {
	t.Helper()
	data, err := os.ReadFile(bootIDFile(n.dir))
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(data))
}

// Reboot is a stand-in for a reboot of the node as its container runtime
// and kubelet see one: files are written anew (node path → content, as
// an image or config management writes them at boot), the node gets a
// new boot ID, and its runtime and kubelet start again. It returns once
// the Node reports the new boot ID and is Ready.
//
// What it is not: the node's other processes, its running containers
// among them, live on, where a real reboot ends them (the kubelet finds
// its pods' sandboxes still there); its containers read this machine's
// boot ID (OwnBootID); its machine ID stays, as a reboot's does. The
// node must have joined with JoinOptions.OwnBootID.
func (c *Cluster) Reboot(t testing.TB, n ClusterNode, files map[string][]byte) {
	t.Helper()
	if !n.opts.OwnBootID {
		t.Fatalf("reboot %s: it joined without JoinOptions.OwnBootID", n.Name)
	}
	for p, content := range files {
		n.writeFiles(t, map[string]nodeFile{p: {content, 0o644}})
	}
	if err := newBoot(n.dir); err != nil {
		t.Fatal(err)
	}
	boot := BootID(t, n.Node)
	units := []string{n.Unit(), n.KubeletUnit()}
	if units[0] == units[1] {
		units = units[:1] // k3s-style: one unit runs both
	}
	if out, err := n.Exec(context.Background(), append([]string{"systemctl", "restart"}, units...)...); err != nil {
		t.Fatalf("restart %v on %s: %v %s", units, n.Name, err, out)
	}
	if err := waitNode(c.Client, n.Name, 90*time.Second, "in boot "+boot, func(node *corev1.Node) (bool, string) {
		return node.Status.NodeInfo.BootID == boot, "it reports boot " + node.Status.NodeInfo.BootID
	}); err != nil {
		t.Fatalf("%v\n%s", err, n.Journal(n.KubeletUnit()))
	}
	if err := c.waitNodeReady(n.Name, 90*time.Second); err != nil {
		t.Fatalf("%v\n%s", err, n.Journal(n.KubeletUnit()))
	}
}
