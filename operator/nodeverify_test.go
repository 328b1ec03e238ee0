package operator_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shimkit/shimkit/internal/testutil"
	"github.com/shimkit/shimkit/nodelabel"
	"github.com/shimkit/shimkit/operator"
)

// TestVerifyRepairsChangedFiles: with a short verify period, the real
// installer verifies each node of a Ready Shim (a verifying Job that
// changes nothing, recorded on the node); a bundle file changed on one
// node is found by the next verification, the node is counted drifted and
// installed again (Warning Drifted, Repairing), which puts the file back
// byte for byte; the other node is only verified, never reinstalled.
func TestVerifyRepairsChangedFiles(t *testing.T) {
	env := startCluster(t)
	f := startFleet(t, env, 2)
	startOperatorWith(t, env, env.Config, func(o *operator.Options) { o.VerifyPeriod = 3 * time.Second })
	batchShims(t, env.Client, testutil.StartFileServer(t), []string{"alpha"})
	waitFor(t, 60*time.Second, "alpha Ready", ready(env.Client, "alpha"))

	ctx := context.Background()
	verifiedBy := func(node string) *nodelabel.Verification {
		n := &corev1.Node{}
		if err := env.Client.Get(ctx, client.ObjectKey{Name: node}, n); err != nil {
			t.Fatal(err)
		}
		return nodelabel.VerificationOf(n, "alpha", getShim(t, env.Client, "alpha").UID)
	}
	for i := range 2 {
		waitFor(t, 30*time.Second, "a verification of "+nodeName(i), func() (bool, string) {
			v := verifiedBy(nodeName(i))
			return v != nil && v.Job != "" && len(v.Drift) == 0, fmt.Sprintf("%+v", v)
		})
	}

	// Config management, or a person, changes the shim's binary on node 0.
	files, _ := filepath.Glob(filepath.Join(f.root(nodeName(0)), "opt/shimkit/alpha/current/*"))
	if len(files) == 0 {
		t.Fatal("no bundle files on node 0")
	}
	orig, err := os.ReadFile(files[0])
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(files[0], []byte("#!/bin/sh\necho changed\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 60*time.Second, "node 0 repaired", func() (bool, string) {
		data, _ := os.ReadFile(files[0])
		v := verifiedBy(nodeName(0))
		return bytes.Equal(data, orig) && v != nil && len(v.Drift) == 0, fmt.Sprintf("file restored %v, verification %+v; Jobs %v; events %q %q; status %+v", bytes.Equal(data, orig), v,
			installJobs(t, env.Client), eventNotes(t, env.Client, "alpha", corev1.EventTypeNormal), eventNotes(t, env.Client, "alpha", corev1.EventTypeWarning), getShim(t, env.Client, "alpha").Status)
	})
	waitFor(t, 30*time.Second, "alpha Ready again", ready(env.Client, "alpha"))

	warnings := eventNotes(t, env.Client, "alpha", corev1.EventTypeWarning)
	if !slices.ContainsFunc(warnings, func(n string) bool {
		return strings.Contains(n, nodeName(0)+" drifted") && strings.Contains(n, filepath.Base(files[0]))
	}) {
		t.Errorf("no Drifted event naming the changed file: %q", warnings)
	}
	jobs := installJobs(t, env.Client)
	if got := len(jobs[nodeName(1)]); got != 1 {
		t.Errorf("node 1 (unchanged) had %d install Jobs, want 1", got)
	}
	if got := len(jobs[nodeName(0)]); got != 1 {
		// The repair reuses the install Job's name (the same spec).
		t.Logf("node 0 had %d install Jobs", got)
	}
}
