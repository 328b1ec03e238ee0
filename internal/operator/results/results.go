package results

import (
	"context"
	"fmt"
	"sync"

	batchv1 "k8s.io/api/batch/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/shimkit/shimkit/installer/plan"
	"github.com/shimkit/shimkit/internal/operator/decide"
	"github.com/shimkit/shimkit/internal/operator/nodejob"
)

// results remembers the NodeResults read from finished Jobs' pods, per
// Shim and Job, so that each Job's pods are read once (and its failure
// reported once), not on every reconcile.
type results struct {
	mu     sync.Mutex
	byShim map[string]map[types.UID]*plan.NodeResult // a nil result: read, none found
}

// Get returns the result of the Shim's Job read by an earlier reconcile
// (read: it was; a nil result then means none was found).
func (r *Reader) Get(shim string, job types.UID) (res *plan.NodeResult, read bool) {
	return r.results.get(shim, job)
}

// Keep forgets the Shim's results of Jobs other than keep's (nil: all).
func (r *Reader) Keep(shim string, keep map[types.UID]bool) { r.results.keep(shim, keep) }

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

// ReadFinished reads the results of the finished Jobs a decision records:
// an install or uninstall Job that failed, or succeeded and is not
// recorded yet, and a verifying Job not recorded yet. A result read now
// (not known from an earlier reconcile) is marked fresh: its failure is
// reported once.
func (r *Reader) ReadFinished(ctx context.Context, obs *decide.Snapshot) error {
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

// readResult returns the shim's NodeResult that the installer wrote as the
// termination message of the Job's newest pod that has one
// (nodejob.ResultOf), or nil when none is readable.
func (r *Reader) readResult(ctx context.Context, job *batchv1.Job, shim string) (*plan.NodeResult, error) {
	pods, err := Pods(ctx, r.reader, job)
	if err != nil {
		return nil, err
	}
	return nodejob.JobResult(job, pods, shim), nil
}
