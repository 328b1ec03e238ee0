package operator

import (
	"sync"

	"k8s.io/apimachinery/pkg/types"

	"github.com/shimkit/shimkit/operator/api/v1alpha1"
)

// retries remembers, per Shim, the retry request acted on and the Jobs it
// deleted, so that a cache that has not yet seen the status or the
// deletion does not act twice or take a deleted Job for a failure. The
// status carries the request and its target too (status.retried,
// retriedSpecHash): that is what a snapshot reads (decide.NewSnapshot),
// kubectl shimkit plan and a restarted operator alike; the memory only
// stands in for a status the cache has not caught up with.
type retries struct {
	mu     sync.Mutex
	byShim map[string]*retried
}

type retried struct {
	uid   types.UID
	value string
	hash  string // the target the request was acted on at ("": unknown)
	jobs  map[types.UID]bool
}

func (rs *retries) entry(shim *v1alpha1.Shim) *retried {
	if rs.byShim == nil {
		rs.byShim = map[string]*retried{}
	}
	e := rs.byShim[shim.Name]
	if e == nil || e.uid != shim.UID {
		e = &retried{uid: shim.UID, value: shim.Status.Retried, hash: shim.Status.RetriedSpecHash, jobs: map[types.UID]bool{}}
		rs.byShim[shim.Name] = e
	}
	return e
}

// latest is the retry request acted on and the target it was acted on
// at, as remembered (from the status when the operator has not acted on
// one since it started).
func (rs *retries) latest(shim *v1alpha1.Shim) (request, hash string) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	e := rs.entry(shim)
	return e.value, e.hash
}

func (rs *retries) put(shim *v1alpha1.Shim, value, hash string) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	e := rs.entry(shim)
	e.value, e.hash = value, hash
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
