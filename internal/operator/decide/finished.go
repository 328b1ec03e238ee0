package decide

import (
	"fmt"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/shimkit/shimkit/installer/plan"
	"github.com/shimkit/shimkit/internal/nodelabel/record"
	"github.com/shimkit/shimkit/internal/operator/jobview"
)

// Finished records what the finished Jobs did (results.Reader.ReadFinished):
// failed ones are reported and recorded on their nodes, succeeded ones
// turn into node labels (installed at the Job's spec hash, or gone), and
// verifications into their findings. The views are left as the actions
// will leave the nodes; then drift is judged on them: what the
// verifications found is drift from now on, what the installs repaired is
// not.
func Finished(obs *Snapshot) []Action {
	var writes Together
	for i := range obs.Views {
		v := &obs.Views[i]
		if j := v.Job; j != nil && (j.Failed() || j.Succeeded() && v.Unrecorded()) {
			writes = append(writes, recordJob(obs, v, obs.Fresh[i]))
		}
		if v.Unverified() {
			writes = append(writes, RecordVerify(obs, v))
		}
	}
	for i := range obs.Views {
		if at := obs.Views[i].DetectDrift(obs.Shim, obs.Hash, obs.Now); !at.IsZero() && (obs.DriftCheck.IsZero() || at.Before(obs.DriftCheck)) {
			obs.DriftCheck = at
		}
	}
	return []Action{writes}
}

// recordJob is what a finished install or uninstall Job leaves: a
// failure's Warning (once, when its result was just read) and record, or
// the node's label.
func recordJob(obs *Snapshot, v *NodeView, fresh bool) InOrder {
	j := v.Job
	var acts InOrder
	if j.Failed() && fresh {
		reason, msg := j.Failure()
		ev := Notice{Node: v.Node, Type: corev1.EventTypeWarning, Reason: OpAction(j.Op) + "Failed", Action: OpAction(j.Op), Note: FailureNote(v.Node.Name, reason, msg)}
		if j.InUse() { // no failure: the node waits for the pods
			ev.Reason, ev.Note = string(plan.ReasonHandlerInUse), fmt.Sprintf("node %s: %s", v.Node.Name, msg)
		}
		acts = append(acts, ev)
	}
	name := obs.Shim.Name
	switch {
	case j.InUse():
		return acts
	case j.Sibling():
		return append(acts, Note{Reason: "RetryAlone", Action: "Install", Detail: fmt.Sprintf("node %s (Job %s: another Shim's plan failed; installing this one again, alone)", v.Node.Name, j.Object.Name)})
	case j.Failed() && j.Batch > 0 && !j.ResultRead:
		// Whose plan failed is in the result: read again next time.
		return acts
	case j.Failed():
		return append(acts, recordFailure(obs, v)...)
	}
	switch j.Op {
	case jobview.OpInstall:
		acts = append(acts, MarkInstalled{Node: v.Node, Shim: name, UID: obs.Shim.UID, SpecHash: j.SpecHash, Scheduling: obs.Shim.Spec.SchedulingLabel})
		// As MarkOn writes: the label, the hash and a verification of this
		// machine (a former machine's label is no longer there to drop).
		v.Label, v.SpecHash, v.Reimaged = record.Installed, j.SpecHash, false
		v.Verified = &record.Verification{ShimUID: obs.Shim.UID, SpecHash: j.SpecHash, Time: obs.Now, Machine: record.Machine(v.Node), Boot: record.Boot(v.Node)}
		digest := ""
		if j.Result != nil && j.Result.Digest != "" {
			digest = ", " + j.Result.Digest
		}
		acts = append(acts, Note{Reason: "Installed", Action: "Install", Detail: fmt.Sprintf("node %s (spec %s%s)", v.Node.Name, j.SpecHash, digest)})
	case jobview.OpUninstall:
		acts = append(acts, Unmark{Node: v.Node.Name, Shim: name, Scheduling: obs.Shim.Spec.SchedulingLabel})
		// As Unmark removes: the label, the hash and every record, a
		// predecessor's or a former machine's included.
		v.Label, v.SpecHash, v.Verified, v.Failure, v.Stale, v.Reimaged = "", "", nil, nil, nil, false
		acts = append(acts, Note{Reason: "Uninstalled", Action: "Uninstall", Detail: "node " + v.Node.Name})
	}
	return append(acts, CountJob{Shim: name, Job: j})
}

// recordFailure writes the failed Job's reason on the node, once, so that
// the failure outlives the Job, and keeps the Job's log until the Job says
// it is kept: an operator that stopped between the two leaves the keeping
// to the next one.
func recordFailure(obs *Snapshot, v *NodeView) []Action {
	j := v.Job
	reason, msg := j.Failure()
	canary := ""
	if reason == string(plan.ReasonCanaryFailed) {
		canary = j.Canary
	}
	if f := v.Failure; f != nil && f.Job == j.Object.Name && f.Op == j.Op && f.SpecHash == j.SpecHash && f.Reason == reason && f.Canary == canary {
		if j.LogKept {
			return nil
		}
		return []Action{keepLog(obs, v, j.Object, reason, f.Time)}
	}
	f := record.Failure{ShimUID: obs.Shim.UID, Op: j.Op, SpecHash: j.SpecHash, Reason: reason, Message: msg, Canary: canary, Job: j.Object.Name, Time: obs.Now.UTC().Truncate(time.Second), Machine: record.Machine(v.Node)}
	v.Failure = &f
	return []Action{MarkFailed{Node: v.Node.Name, Shim: obs.Shim.Name, Failure: f}, CountJob{Shim: obs.Shim.Name, Job: j},
		keepLog(obs, v, j.Object, reason, f.Time)}
}

// FailureNote says why a node failed, for events and conditions:
// "node n1: ConfigInvalid: /etc/containerd/config.toml:12: ...".
func FailureNote(node, reason, message string) string {
	if message == "" {
		return fmt.Sprintf("node %s: %s", node, reason)
	}
	return fmt.Sprintf("node %s: %s: %s", node, reason, message)
}

// RecordVerify records a finished verifying Job's finding (ReadFinished)
// on the node, and marks the node drifted when it found something.
func RecordVerify(obs *Snapshot, v *NodeView) InOrder {
	j := v.Verify
	found := record.Verification{ShimUID: obs.Shim.UID, SpecHash: j.SpecHash, Time: obs.Now.UTC().Truncate(time.Second), Job: j.Object.Name, JobUID: string(j.Object.UID), Machine: record.Machine(v.Node), Boot: record.Boot(v.Node)}
	if done := j.Object.Status.CompletionTime; done != nil {
		found.Time = done.UTC()
	}
	var acts InOrder
	if j.Failed() {
		// Nothing found either way: looked at again a period later.
		reason, msg := j.Failure()
		acts = append(acts, Notice{Node: v.Node, Type: corev1.EventTypeWarning, Reason: "VerifyFailed", Action: "Verify", Note: FailureNote(v.Node.Name, reason, msg)})
	} else if j.Result != nil {
		found.Drift = j.Result.Drift
	}
	acts = append(acts, MarkVerified{Node: v.Node.Name, Shim: obs.Shim.Name, Found: found})
	v.Verified = &found
	if len(found.Drift) == 0 {
		acts = append(acts, Note{Reason: "Verified", Action: "Verify", Detail: "node " + v.Node.Name})
	}
	return append(acts, CountJob{Shim: obs.Shim.Name, Job: j})
}

// keepLog keeps the failed Job's log (KeepLog), saying with a Warning
// LogNotKept what cannot be kept.
func keepLog(obs *Snapshot, v *NodeView, job *batchv1.Job, reason string, at time.Time) KeepLog {
	warn := func(note string) Notice {
		return Notice{Type: corev1.EventTypeWarning, Reason: "LogNotKept", Action: "Install", Note: note}
	}
	return KeepLog{Shim: obs.Shim, Node: v.Node.Name, Reason: reason, Job: job, At: at,
		NotCopied: warn(fmt.Sprintf("node %s: no copy of Job %s's log", v.Node.Name, job.Name)),
		NotKept:   warn(fmt.Sprintf("node %s: Job %s not kept longer for its log", v.Node.Name, job.Name))}
}
