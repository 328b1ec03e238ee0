package testutil_test

import (
	"context"
	"strings"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/shimkit/shimkit/internal/testutil"
)

// TestContainerdMatrix starts every containerd of the matrix, asks CRI
// whether it is ready, restarts it, and checks that stopping it leaves no
// process or mount behind.
func TestContainerdMatrix(t *testing.T) {
	for _, b := range testutil.ContainerdMatrix(t) {
		t.Run(b.Name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			c := testutil.StartContainerd(t, b, b.MinimalConfig())
			rt := c.Runtime(t)
			v, err := rt.Version(ctx, &runtimeapi.VersionRequest{})
			if err != nil {
				t.Fatal(err)
			}
			if v.RuntimeName != "containerd" || !strings.Contains(b.Version, strings.TrimSuffix(strings.SplitN(v.RuntimeVersion, "~", 2)[0], "+unknown")) {
				t.Errorf("CRI Version = %s %s, want containerd %s", v.RuntimeName, v.RuntimeVersion, b.Version)
			}
			first := c.Pid()
			start := time.Now()
			if err := c.Restart(ctx); err != nil {
				t.Fatal(err)
			}
			t.Logf("containerd %s restart to RuntimeReady: %v", b.Version, time.Since(start).Round(time.Millisecond))
			if c.Pid() == first {
				t.Errorf("pid %d unchanged after restart", first)
			}
			st, err := rt.Status(ctx, &runtimeapi.StatusRequest{})
			if err != nil {
				t.Fatalf("CRI Status after restart: %v", err)
			}
			if !runtimeReady(st) {
				t.Errorf("RuntimeReady not true after restart: %v", st.Status.Conditions)
			}
			if _, err := c.ConfigDump(ctx); err != nil {
				t.Error(err)
			}
			if err := c.Teardown(ctx); err != nil {
				t.Fatal(err)
			}
			if procs := testutil.ProcessesMentioning(c.Dir); len(procs) != 0 {
				t.Errorf("processes left: %v", procs)
			}
			if mounts := testutil.MountsUnder(c.Dir); len(mounts) != 0 {
				t.Errorf("mounts left: %v", mounts)
			}
		})
	}
}

func runtimeReady(st *runtimeapi.StatusResponse) bool {
	for _, c := range st.GetStatus().GetConditions() {
		if c.Type == runtimeapi.RuntimeReady {
			return c.Status
		}
	}
	return false
}
