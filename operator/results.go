package operator

import (
	"context"
	"fmt"
	"sync"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/shimkit/shimkit/installer/plan"
	"github.com/shimkit/shimkit/nodelabel"
	"github.com/shimkit/shimkit/nodelabel/record"
	"github.com/shimkit/shimkit/operator/decide"
	"github.com/shimkit/shimkit/operator/fleet"
	"github.com/shimkit/shimkit/operator/jobview"
	"github.com/shimkit/shimkit/operator/nodejob"
)

// results remembers the NodeResults read from finished Jobs' pods, per
// Shim and Job, so that each Job's pods are read once (and its failure
// reported once), not on every reconcile.
type results struct {
	mu     sync.Mutex
	byShim map[string]map[types.UID]*plan.NodeResult // a nil result: read, none found
}

func (rs *results) get(shim string, job types.UID) (*plan.NodeResult, bool) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	res, ok := rs.byShim[shim][job]
	return res, ok
}

func (rs *results) put(shim string, job types.UID, res *plan.NodeResult) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if rs.byShim == nil {
		rs.byShim = map[string]map[types.UID]*plan.NodeResult{}
	}
	if rs.byShim[shim] == nil {
		rs.byShim[shim] = map[types.UID]*plan.NodeResult{}
	}
	rs.byShim[shim][job] = res
}

// keep forgets the Shim's results of Jobs other than keep's.
func (rs *results) keep(shim string, keep map[types.UID]bool) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	for uid := range rs.byShim[shim] {
		if !keep[uid] {
			delete(rs.byShim[shim], uid)
		}
	}
	if len(keep) == 0 {
		delete(rs.byShim, shim)
	}
}

// readFinished reads the results of the finished Jobs a decision records:
// an install or uninstall Job that failed, or succeeded and is not
// recorded yet, and a verifying Job not recorded yet. A result read now
// (not known from an earlier reconcile) is marked fresh: its failure is
// reported once.
func (r *resultReader) readFinished(ctx context.Context, obs *observed) error {
	obs.Fresh = make([]bool, len(obs.Views))
	g := r.group(ctx)
	for i := range obs.Views {
		v := &obs.Views[i]
		if j := v.Job; j != nil && !j.ResultRead && (j.Failed() || j.Succeeded() && v.Unrecorded()) {
			g.Go(func() error {
				res, err := r.resultOf(ctx, j.Object, obs.Shim.Name)
				if err != nil {
					// Not fatal: the Job's condition stands in, and a failed
					// Job's pods are read again next time.
					log.FromContext(ctx).Error(err, "reading the installer's result", "node", v.Node.Name)
					return nil
				}
				j.Result, j.ResultRead, obs.Fresh[i] = res, true, true
				r.results.put(obs.Shim.Name, j.Object.UID, res)
				return nil
			})
		}
		if j := v.Verify; v.Unverified() {
			g.Go(func() error {
				res, err := r.resultOf(ctx, j.Object, obs.Shim.Name)
				if err != nil {
					return fmt.Errorf("verification of node %s: %w", v.Node.Name, err)
				}
				j.Result, j.ResultRead = res, true
				r.results.put(obs.Shim.Name, j.Object.UID, res)
				return nil
			})
		}
	}
	return g.Wait()
}

// decideFinished records what the finished Jobs did (readFinished):
// failed ones are reported and recorded on their nodes, succeeded ones
// turn into node labels (installed at the Job's spec hash, or gone), and
// verifications into their findings. The views are left as the actions
// will leave the nodes; then drift is judged on them: what the
// verifications found is drift from now on, what the installs repaired is
// not.
func decideFinished(obs *observed) []decide.Action {
	var writes decide.Together
	for i := range obs.Views {
		v := &obs.Views[i]
		if j := v.Job; j != nil && (j.Failed() || j.Succeeded() && v.Unrecorded()) {
			writes = append(writes, recordJob(obs, v, obs.Fresh[i]))
		}
		if v.Unverified() {
			writes = append(writes, recordVerify(obs, v))
		}
	}
	for i := range obs.Views {
		if at := obs.Views[i].DetectDrift(obs.Shim, obs.Hash, obs.Now); !at.IsZero() && (obs.DriftCheck.IsZero() || at.Before(obs.DriftCheck)) {
			obs.DriftCheck = at
		}
	}
	return []decide.Action{writes}
}

// recordJob is what a finished install or uninstall Job leaves: a
// failure's Warning (once, when its result was just read) and record, or
// the node's label.
func recordJob(obs *observed, v *fleet.NodeView, fresh bool) decide.InOrder {
	j := v.Job
	var acts decide.InOrder
	if j.Failed() && fresh {
		reason, msg := j.Failure()
		acts = append(acts, decide.EmitEvent{Shim: obs.Shim, Related: v.Node, Type: corev1.EventTypeWarning, Reason: opAction(j.Op) + "Failed", Action: opAction(j.Op), Note: failureNote(v.Node.Name, reason, msg)})
	}
	name := obs.Shim.Name
	switch {
	case j.Sibling():
		return append(acts, decide.Note{Events: &obs.Events, Reason: "RetryAlone", Action: "Install", Detail: fmt.Sprintf("node %s (Job %s: another Shim's plan failed; installing this one again, alone)", v.Node.Name, j.Object.Name)})
	case j.Failed() && j.Batch > 0 && !j.ResultRead:
		// Whose plan failed is in the result: read again next time.
		return acts
	case j.Failed():
		return append(acts, recordFailure(obs, v)...)
	}
	switch j.Op {
	case jobview.OpInstall:
		acts = append(acts, decide.MarkInstalled{Node: v.Node, Shim: name, UID: obs.Shim.UID, SpecHash: j.SpecHash})
		// As MarkOn writes: the label, the hash and a verification of this
		// machine (a former machine's label is no longer there to drop).
		v.Label, v.SpecHash, v.Reimaged = nodelabel.Installed, j.SpecHash, false
		v.Verified = &nodelabel.Verification{ShimUID: obs.Shim.UID, SpecHash: j.SpecHash, Time: obs.Now, Machine: record.Machine(v.Node)}
		digest := ""
		if j.Result != nil && j.Result.Digest != "" {
			digest = ", " + j.Result.Digest
		}
		acts = append(acts, decide.Note{Events: &obs.Events, Reason: "Installed", Action: "Install", Detail: fmt.Sprintf("node %s (spec %s%s)", v.Node.Name, j.SpecHash, digest)})
	case jobview.OpUninstall:
		acts = append(acts, decide.Unmark{Node: v.Node.Name, Shim: name})
		// As Unmark removes: the label, the hash and every record, a
		// predecessor's or a former machine's included.
		v.Label, v.SpecHash, v.Verified, v.Failure, v.Stale, v.Reimaged = "", "", nil, nil, nil, false
		acts = append(acts, decide.Note{Events: &obs.Events, Reason: "Uninstalled", Action: "Uninstall", Detail: "node " + v.Node.Name})
	}
	return append(acts, decide.CountJob{Shim: name, Job: j})
}

// recordFailure writes the failed Job's reason on the node, once, so that
// the failure outlives the Job.
func recordFailure(obs *observed, v *fleet.NodeView) []decide.Action {
	j := v.Job
	reason, msg := j.Failure()
	canary := ""
	if reason == string(plan.ReasonCanaryFailed) {
		canary = j.Canary
	}
	if f := v.Failure; f != nil && f.Job == j.Object.Name && f.Op == j.Op && f.SpecHash == j.SpecHash && f.Reason == reason && f.Canary == canary {
		return nil
	}
	f := nodelabel.Failure{ShimUID: obs.Shim.UID, Op: j.Op, SpecHash: j.SpecHash, Reason: reason, Message: msg, Canary: canary, Job: j.Object.Name, Time: obs.Now.UTC().Truncate(time.Second), Machine: record.Machine(v.Node)}
	v.Failure = &f
	return []decide.Action{decide.MarkFailed{Node: v.Node.Name, Shim: obs.Shim.Name, Failure: f}, decide.CountJob{Shim: obs.Shim.Name, Job: j}}
}

// readResult returns the shim's NodeResult that the installer wrote as the
// termination message of the Job's newest pod that has one
// (nodejob.ResultOf), or nil when none is readable.
func (r *resultReader) readResult(ctx context.Context, job *batchv1.Job, shim string) (*plan.NodeResult, error) {
	pods, err := nodejob.Pods(ctx, r.reader, job)
	if err != nil {
		return nil, err
	}
	return nodejob.JobResult(job, pods, shim), nil
}

// failureNote says why a node failed, for events and conditions:
// "node n1: ConfigInvalid: /etc/containerd/config.toml:12: ...".
func failureNote(node, reason, message string) string {
	if message == "" {
		return fmt.Sprintf("node %s: %s", node, reason)
	}
	return fmt.Sprintf("node %s: %s: %s", node, reason, message)
}
