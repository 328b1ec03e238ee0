package decide

import (
	"errors"
	"reflect"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/shimkit/shimkit/internal/operator/health"
	"github.com/shimkit/shimkit/internal/operator/shimspec"
	"github.com/shimkit/shimkit/operator/api/v1alpha1"
)

// gateObs is a gated Shim's snapshot: n1 and n2 have the target h1, n3
// an older spec; drifted names the updated nodes whose kubelet lost the
// handler.
func gateObs(perNode, total int32, drifted ...string) *Snapshot {
	shim := decideShim()
	shim.Spec.RolloutStrategy.HealthGate = &v1alpha1.HealthGate{MaxFailuresPerNode: ptr.To(perNode), MaxFailures: ptr.To(total)}
	obs := &Snapshot{Shim: shim, Hash: "h1", SpecHash: "h1"}
	for _, n := range []*corev1.Node{nodeAt("n1", "a", "h1", nil), nodeAt("n2", "a", "h1", nil), nodeAt("n3", "a", "h0", nil)} {
		n.Status.RuntimeHandlers = []corev1.NodeRuntimeHandler{{Name: "spin"}, {Name: "runc"}}
		v := NodeViewOf(shim, n, "")
		for _, d := range drifted {
			if d == n.Name {
				n.Status.RuntimeHandlers = n.Status.RuntimeHandlers[1:]
				v.Drifted = "handler spin not served"
			}
		}
		obs.Views = append(obs.Views, v)
	}
	return obs
}

// TestJudgeGate: the health gate's verdict, from the workload failures
// read and the snapshot alone: the thresholds per node and in total, lost
// handlers counting as failures of their node, and only the nodes that
// have the target.
func TestJudgeGate(t *testing.T) {
	fail := func(node string) health.Failure {
		return health.Failure{Node: node, Namespace: "default", Pod: "web-" + node, Reason: health.ReasonSandboxFailed}
	}
	for _, tc := range []struct {
		name     string
		obs      *Snapshot
		failures []health.Failure
		tripped  bool
	}{
		{name: "healthy", obs: gateObs(1, 3), tripped: false},
		{name: "one failure within the thresholds", obs: gateObs(2, 3), failures: []health.Failure{fail("n1")}, tripped: false},
		{name: "a node past its threshold", obs: gateObs(1, 3), failures: []health.Failure{fail("n1"), fail("n1")}, tripped: true},
		{name: "the fleet past its threshold", obs: gateObs(5, 2), failures: []health.Failure{fail("n1"), fail("n2"), fail("n2")}, tripped: true},
		{name: "a lost handler counts", obs: gateObs(1, 3, "n1"), failures: []health.Failure{fail("n1")}, tripped: true},
		{name: "a node without the target does not count its lost handler", obs: gateObs(1, 1, "n3"), tripped: false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			trip := JudgeGate(tc.obs, tc.failures)
			if (trip != nil) != tc.tripped {
				t.Fatalf("tripped %v, want %v", trip, tc.tripped)
			}
			if trip != nil && (trip.Reason != v1alpha1.ReasonWorkloadFailures || trip.Message == "") {
				t.Errorf("trip %+v: want reason %s and a message", trip, v1alpha1.ReasonWorkloadFailures)
			}
		})
	}
}

// TestGateWatches: the gate judges a gated rollout until it is recorded
// as rolled out or halted (a retry lifts the halt), never a revert or a
// refused spec; failures count from the rollout's start.
func TestGateWatches(t *testing.T) {
	started := metav1.NewTime(time.Date(2026, 11, 26, 10, 0, 0, 0, time.UTC))
	now := started.Add(time.Hour)
	for _, tc := range []struct {
		name    string
		change  func(*Snapshot)
		watches bool
		since   time.Time
	}{
		{name: "a gated rollout, not started", watches: true, since: now},
		{name: "no gate", change: func(o *Snapshot) { o.Shim.Spec.RolloutStrategy.HealthGate = nil }, watches: false},
		{name: "started", change: func(o *Snapshot) {
			o.Shim.Status.Rollout = &v1alpha1.RolloutStatus{SpecHash: "h1", StartedAt: started}
		}, watches: true, since: started.Time},
		{name: "halted", change: func(o *Snapshot) {
			o.Shim.Status.Rollout = &v1alpha1.RolloutStatus{SpecHash: "h1", StartedAt: started, Halt: &v1alpha1.RolloutHalt{Reason: "WorkloadFailures"}}
		}, watches: false},
		{name: "halted, retried now", change: func(o *Snapshot) {
			o.Shim.Status.Rollout = &v1alpha1.RolloutStatus{SpecHash: "h1", StartedAt: started, Halt: &v1alpha1.RolloutHalt{Reason: "WorkloadFailures"}}
			o.RetriedNow = true
		}, watches: true, since: now},
		{name: "rolled out", change: func(o *Snapshot) { o.Shim.Status.Revisions = []v1alpha1.Revision{{SpecHash: "h1"}} }, watches: false},
		{name: "reverting", change: func(o *Snapshot) { o.Reverted = "h2" }, watches: false},
		{name: "refused", change: func(o *Snapshot) { o.Refusal = &shimspec.Refusal{Reason: "ResolveFailed"} }, watches: false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			obs := gateObs(1, 3)
			if tc.change != nil {
				tc.change(obs)
			}
			if got := obs.GateWatches(); got != tc.watches {
				t.Fatalf("gateWatches %v, want %v", got, tc.watches)
			}
			if tc.watches && !GateSince(obs, now).Equal(tc.since) {
				t.Errorf("since %v, want %v", GateSince(obs, now), tc.since)
			}
		})
	}
}

// TestRevertTarget: a failed rollout goes back only to a previous
// revision the status records, never to the target itself, never for a
// Shim being deleted.
func TestRevertTarget(t *testing.T) {
	revs := []v1alpha1.Revision{{SpecHash: "h0", ControllerRevision: "spin-h0"}, {SpecHash: "hx", ControllerRevision: "spin-hx"}}
	for _, tc := range []struct {
		name   string
		status v1alpha1.ShimStatus
		delete bool
		want   string
	}{
		{name: "no rollout status", status: v1alpha1.ShimStatus{Revisions: revs}},
		{name: "not reverting", status: v1alpha1.ShimStatus{Revisions: revs, Rollout: &v1alpha1.RolloutStatus{SpecHash: "h1"}}},
		{name: "reverting to h0", status: v1alpha1.ShimStatus{Revisions: revs, Rollout: &v1alpha1.RolloutStatus{SpecHash: "h1", RevertedTo: "h0"}}, want: "spin-h0"},
		{name: "the revision is gone from the status", status: v1alpha1.ShimStatus{Revisions: revs[1:], Rollout: &v1alpha1.RolloutStatus{SpecHash: "h1", RevertedTo: "h0"}}},
		{name: "a revert of another target", status: v1alpha1.ShimStatus{Revisions: revs, Rollout: &v1alpha1.RolloutStatus{SpecHash: "h9", RevertedTo: "h0"}}},
		{name: "never to the target itself", status: v1alpha1.ShimStatus{Revisions: []v1alpha1.Revision{{SpecHash: "h1"}}, Rollout: &v1alpha1.RolloutStatus{SpecHash: "h1", RevertedTo: "h1"}}},
		{name: "being deleted", delete: true, status: v1alpha1.ShimStatus{Revisions: revs, Rollout: &v1alpha1.RolloutStatus{SpecHash: "h1", RevertedTo: "h0"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			obs := gateObs(1, 1)
			obs.Shim.Status = tc.status
			if tc.delete {
				obs.Shim.DeletionTimestamp = &metav1.Time{Time: time.Now()}
			}
			got := ""
			if rev := RevertTarget(obs); rev != nil {
				got = rev.ControllerRevision
			}
			if got != tc.want {
				t.Errorf("revert to %q, want %q", got, tc.want)
			}
		})
	}
}

// TestRevert: the revision read becomes the target with the current
// rollout strategy and its own artifact; one gone leaves the target and
// says why in a Warning notice; none changes nothing.
func TestRevert(t *testing.T) {
	old := decideShim().Spec
	old.FetchStrategy.AnonHTTP = &v1alpha1.AnonHTTPFetch{Location: "https://artifacts.invalid/spin-0.tar.gz"}
	old.RolloutStrategy = nil
	art := &v1alpha1.ResolvedArtifact{Digest: "sha256:0"}
	for _, tc := range []struct {
		name       string
		rev        *RevisionRead
		wantHash   string
		wantNotice string
	}{
		{name: "no revert", wantHash: "h1"},
		{name: "the revision read", rev: &RevisionRead{Revision: v1alpha1.Revision{SpecHash: "h0"}, Spec: old, Artifact: art}, wantHash: "h0"},
		{name: "the revision gone", rev: &RevisionRead{Revision: v1alpha1.Revision{SpecHash: "h0"}, Gone: errors.New("spin-h0 not found")}, wantHash: "h1", wantNotice: "RevertFailed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			obs := gateObs(1, 1)
			strategy := obs.Shim.Spec.RolloutStrategy
			before := obs.Shim.DeepCopy()
			Revert(obs, tc.rev)
			if obs.Hash != tc.wantHash {
				t.Errorf("target %s, want %s", obs.Hash, tc.wantHash)
			}
			if !reflect.DeepEqual(before, obs.Shim) != (tc.wantHash == "h0") {
				t.Errorf("shim changed: %v, want %v", !reflect.DeepEqual(before, obs.Shim), tc.wantHash == "h0")
			}
			if tc.wantHash == "h0" {
				if obs.Reverted != "h1" || obs.Art != art || obs.Shim.Spec.FetchStrategy.AnonHTTP.Location != old.FetchStrategy.AnonHTTP.Location || !reflect.DeepEqual(obs.Shim.Spec.RolloutStrategy, strategy) {
					t.Errorf("reverted %q, artifact %v, spec %+v: want the revision's, the current strategy", obs.Reverted, obs.Art, obs.Shim.Spec)
				}
			}
			got := ""
			if len(obs.Notices) > 0 {
				got = obs.Notices[0].Reason
			}
			if got != tc.wantNotice {
				t.Errorf("notice %q, want %q", got, tc.wantNotice)
			}
		})
	}
}
