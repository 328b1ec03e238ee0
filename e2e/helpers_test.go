package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shimkit/shimkit/internal/testutil"
)

const (
	crdName   = "shims.containerd.x-k8s.io"
	leaseName = "shimkit-operator.containerd.x-k8s.io"
)

// toolBinary returns the tool from $env (when env is set) or bin/name:
// make test builds both before the tests.
func toolBinary(t *testing.T, env, name string) string {
	t.Helper()
	var p string
	if env != "" {
		p = os.Getenv(env)
	}
	if p == "" {
		p = filepath.Join(testutil.RepoRoot(), "bin", name)
	}
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("%s: %v (build it with `make tools`)", name, err)
	}
	return p
}

func operatorPod(t *testing.T, c *testutil.Cluster, ns string) *corev1.Pod {
	t.Helper()
	var pod *corev1.Pod
	waitFor(t, 60*time.Second, "one running operator pod", func() bool {
		pods := &corev1.PodList{}
		if err := c.Client.List(context.Background(), pods, client.InNamespace(ns), client.MatchingLabels{"app.kubernetes.io/name": "shimkit-operator"}); err != nil || len(pods.Items) != 1 {
			return false
		}
		pod = &pods.Items[0]
		return pod.Status.Phase == corev1.PodRunning && pod.DeletionTimestamp == nil
	})
	return pod
}

func leaseHolder(t *testing.T, c *testutil.Cluster, ns string) string {
	t.Helper()
	l := &coordinationv1.Lease{}
	if err := c.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: leaseName}, l); err != nil || l.Spec.HolderIdentity == nil {
		return ""
	}
	return *l.Spec.HolderIdentity
}

func jobNames(t *testing.T, c *testutil.Cluster, ns string) string {
	t.Helper()
	return strings.Join(strings.Fields(kubectl(t, c, "-n", ns, "get", "jobs", "-o", "name")), " ")
}

// podLog reads a pod's container logs on the node.
// podLog reads the pod's container logs on the node it runs on.
func podLog(c *testutil.Cluster, p *corev1.Pod) string {
	node := c.Node
	for _, n := range c.Nodes {
		if n.Name == p.Spec.NodeName {
			node = n.Node
		}
	}
	logs, _ := filepath.Glob(node.Local(fmt.Sprintf("/var/log/pods/%s_%s_%s/*/*.log", p.Namespace, p.Name, p.UID)))
	var b strings.Builder
	for _, l := range logs {
		data, _ := os.ReadFile(l)
		b.Write(data)
	}
	return b.String()
}

func envValue(c corev1.Container, name string) string {
	for _, e := range c.Env {
		if e.Name == name {
			return e.Value
		}
	}
	return ""
}
