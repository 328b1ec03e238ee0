package operator

import (
	"context"
	"fmt"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shimkit/shimkit/nodelabel"
	"github.com/shimkit/shimkit/operator/api/v1alpha1"
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

// retry acts on a new retry annotation: the selected failed nodes lose
// their failure (the failed Job and the node's record), so that the
// planner starts them again under maxUpdate.
func (r *Reconciler) retry(ctx context.Context, obs *observed) error {
	shim := obs.shim
	obs.retried = r.retries.latest(shim)
	req := shim.Annotations[v1alpha1.RetryAnnotation]
	if req == "" || req == obs.retried {
		return nil
	}
	obs.retriedNow = true
	all, names := retrySelection(req)
	var retried []string
	for i := range obs.views {
		v := &obs.views[i]
		if !v.FailedNode() || !all && !names[v.Node.Name] {
			continue
		}
		if j := v.Job; j != nil {
			if err := r.client.Delete(ctx, j.Object, client.PropagationPolicy(metav1.DeletePropagationBackground)); client.IgnoreNotFound(err) != nil {
				return fmt.Errorf("retry node %s: delete Job %s: %w", v.Node.Name, j.Object.Name, err)
			}
			r.retries.forgetJob(shim, j.Object.UID)
			v.Job = nil
		}
		if v.Failure != nil {
			if err := nodelabel.ClearFailure(ctx, r.client, v.Node.Name, shim.Name); err != nil {
				return err
			}
			v.Failure = nil
		}
		retried = append(retried, v.Node.Name)
	}
	obs.retried = req
	r.retries.put(shim, req)
	if len(retried) > 0 {
		r.event(shim, nil, corev1.EventTypeNormal, "Retry", "Install", "retrying %d failed nodes (%s): %s", len(retried), req, strings.Join(retried[:min(len(retried), 10)], ", "))
	}
	return nil
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
