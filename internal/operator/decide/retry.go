package decide

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/shimkit/shimkit/operator/api/v1alpha1"
)

// RetrySelection reads a retry annotation: "all" or node names, then
// optionally "@" and a token that makes the request new.
func RetrySelection(value string) (all bool, nodes map[string]bool) {
	sel, _, _ := strings.Cut(value, "@")
	nodes = map[string]bool{}
	for _, n := range strings.Split(sel, ",") {
		if n = strings.TrimSpace(n); n == "all" {
			all = true
		} else if n != "" {
			nodes[n] = true
		}
	}
	return all, nodes
}

// Retry acts on a new retry annotation: the selected failed nodes
// lose their failure (the failed Job and the node's record), so that the
// planner starts them again under maxUpdate. The views are left as the
// actions will leave the nodes.
func Retry(obs *Snapshot) []Action {
	shim := obs.Shim
	req := shim.Annotations[v1alpha1.RetryAnnotation]
	if req == "" || req == obs.Retried {
		return nil
	}
	obs.RetriedNow = true
	all, names := RetrySelection(req)
	var writes Together
	var retried []string
	remember := RememberRetry{Shim: shim, Request: req, Hash: obs.Hash}
	for i := range obs.Views {
		v := &obs.Views[i]
		if !v.FailedNode() || !all && !names[v.Node.Name] {
			continue
		}
		var steps InOrder
		if j := v.Job; j != nil {
			steps = append(steps, DeleteJob{Job: j.Object, Node: v.Node.Name, Why: "retry"})
			remember.Jobs = append(remember.Jobs, j.Object.UID)
			v.Job = nil
		}
		if v.Failure != nil {
			steps = append(steps, ClearFailure{Node: v.Node.Name, Shim: shim.Name})
			v.Failure = nil
		}
		writes = append(writes, steps)
		retried = append(retried, v.Node.Name)
	}
	obs.Retried, obs.RetriedHash = req, obs.Hash
	acts := []Action{writes, remember}
	if len(retried) > 0 {
		acts = append(acts, Notice{Type: corev1.EventTypeNormal, Reason: "Retry", Action: "Install",
			Note: fmt.Sprintf("retrying %d failed nodes (%s): %s", len(retried), req, strings.Join(retried[:min(len(retried), 10)], ", "))})
	}
	return acts
}

// retriedNode: a node-specific retry request acted on at the rollout's
// target names the node (a retry of "all" clears every failure, so no
// halt is left to pass).
func (o *Snapshot) retriedNode(name string) bool {
	if o.Retried == "" || o.RetriedHash != o.Hash {
		return false
	}
	all, nodes := RetrySelection(o.Retried)
	return !all && nodes[name]
}
