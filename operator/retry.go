package operator

import (
	"fmt"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/shimkit/shimkit/operator/api/v1alpha1"
	"github.com/shimkit/shimkit/operator/decide"
)

// retrySelection reads a retry annotation: "all" or node names, then
// optionally "@" and a token that makes the request new.
func retrySelection(value string) (all bool, nodes map[string]bool) {
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

// decideRetry acts on a new retry annotation: the selected failed nodes
// lose their failure (the failed Job and the node's record), so that the
// planner starts them again under maxUpdate. The views are left as the
// actions will leave the nodes.
func decideRetry(obs *observed) []decide.Action {
	shim := obs.Shim
	req := shim.Annotations[v1alpha1.RetryAnnotation]
	if req == "" || req == obs.Retried {
		return nil
	}
	obs.RetriedNow = true
	all, names := retrySelection(req)
	var writes decide.Together
	var retried []string
	remember := decide.RememberRetry{Shim: shim, Request: req}
	for i := range obs.Views {
		v := &obs.Views[i]
		if !v.FailedNode() || !all && !names[v.Node.Name] {
			continue
		}
		var steps decide.InOrder
		if j := v.Job; j != nil {
			steps = append(steps, decide.DeleteJob{Job: j.Object, Node: v.Node.Name, Why: "retry"})
			remember.Jobs = append(remember.Jobs, j.Object.UID)
			v.Job = nil
		}
		if v.Failure != nil {
			steps = append(steps, decide.ClearFailure{Node: v.Node.Name, Shim: shim.Name})
			v.Failure = nil
		}
		writes = append(writes, steps)
		retried = append(retried, v.Node.Name)
	}
	obs.Retried = req
	acts := []decide.Action{writes, remember}
	if len(retried) > 0 {
		acts = append(acts, decide.EmitEvent{Shim: shim, Type: corev1.EventTypeNormal, Reason: "Retry", Action: "Install",
			Note: fmt.Sprintf("retrying %d failed nodes (%s): %s", len(retried), req, strings.Join(retried[:min(len(retried), 10)], ", "))})
	}
	return acts
}

// retries remembers, per Shim, the retry request acted on and the Jobs it
// deleted, so that a cache that has not yet seen the status or the
// deletion does not act twice or take a deleted Job for a failure.
type retries struct {
	mu     sync.Mutex
	byShim map[string]*retried
}

type retried struct {
	uid   types.UID
	value string
	jobs  map[types.UID]bool
}

func (rs *retries) entry(shim *v1alpha1.Shim) *retried {
	if rs.byShim == nil {
		rs.byShim = map[string]*retried{}
	}
	e := rs.byShim[shim.Name]
	if e == nil || e.uid != shim.UID {
		e = &retried{uid: shim.UID, value: shim.Status.Retried, jobs: map[types.UID]bool{}}
		rs.byShim[shim.Name] = e
	}
	return e
}

func (rs *retries) latest(shim *v1alpha1.Shim) string {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	return rs.entry(shim).value
}

func (rs *retries) put(shim *v1alpha1.Shim, value string) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	rs.entry(shim).value = value
}

// forgetJob records a Job deleted by a retry.
func (rs *retries) forgetJob(shim *v1alpha1.Shim, job types.UID) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	rs.entry(shim).jobs[job] = true
}

// deleted reports whether a retry deleted the Job.
func (rs *retries) deleted(shim *v1alpha1.Shim, job types.UID) bool {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	return rs.entry(shim).jobs[job]
}

func (rs *retries) forget(name string) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	delete(rs.byShim, name)
}
