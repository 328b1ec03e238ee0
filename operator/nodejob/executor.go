package nodejob

import (
	"context"
	"errors"
	"fmt"
	"maps"

	batchv1 "k8s.io/api/batch/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shimkit/shimkit/installer/plan"
	"github.com/shimkit/shimkit/operator/jobview"
)

// ErrNodeBusy is returned by Start while another installer Job runs on the
// node: containerd restarts one change at a time.
var ErrNodeBusy = errors.New("another installer Job runs on the node")

// ErrRunning is returned by Result while the Job runs.
var ErrRunning = errors.New("the installer Job has not finished")

// ErrNoResult is returned by Result for a failed Job that left no
// readable result; the error names the Job's condition.
var ErrNoResult = errors.New("the installer Job failed without a readable result")

// Cluster is what an Executor needs of the API server: create Jobs, and
// read them and their pods. A controller-runtime client is one.
type Cluster interface {
	client.Reader
	Create(ctx context.Context, obj client.Object, opts ...client.CreateOption) error
}

var _ Cluster = client.Client(nil)

// Executor runs plans on nodes as installer Jobs, one at a time per node,
// in the namespace of its Spec.
type Executor struct {
	c    Cluster
	spec Spec
}

// NewExecutor returns an Executor creating its Jobs with c as spec says
// (spec.Name is computed per plan when empty: jobview.JobName).
func NewExecutor(c Cluster, spec Spec) *Executor { return &Executor{c: c, spec: spec} }

// Start creates the Job carrying out p on its node, p.Node, unless an
// installer Job runs there (ErrNodeBusy). Starting a plan again while its
// Job exists returns that Job: Start is idempotent per plan.
func (e *Executor) Start(ctx context.Context, p *plan.NodePlan) (*batchv1.Job, error) {
	s := e.spec
	op := string(p.Operation)
	if s.Name == "" {
		s.Name = jobview.JobName(p.Shim.Name, p.Node, op, p.SpecHash)
	}
	s.Labels = maps.Clone(s.Labels)
	if s.Labels == nil {
		s.Labels = map[string]string{}
	}
	s.Labels[jobview.LabelManagedBy] = jobview.ManagedBy
	s.Labels[jobview.LabelShim] = jobview.LabelValue(p.Shim.Name)
	s.Labels[jobview.LabelNode] = jobview.LabelValue(p.Node)
	s.Labels[jobview.LabelOp] = op
	job, err := Build(p, s)
	if err != nil {
		return nil, err
	}
	if running, err := e.running(ctx, p.Node); err != nil {
		return nil, err
	} else if running != nil && running.Name == job.Name {
		return running, nil // this plan's Job
	} else if running != nil {
		return nil, fmt.Errorf("node %s: %w (%s)", p.Node, ErrNodeBusy, running.Name)
	}
	err = e.c.Create(ctx, job)
	if apierrors.IsAlreadyExists(err) {
		old := &batchv1.Job{}
		if err := e.c.Get(ctx, client.ObjectKeyFromObject(job), old); err != nil {
			return nil, fmt.Errorf("read installer Job %s for node %s: %w", job.Name, p.Node, err)
		}
		return old, nil
	}
	if err != nil {
		return nil, fmt.Errorf("create Job %s for node %s: %w", job.Name, p.Node, err)
	}
	return job, nil
}

// running returns the installer Job of the namespace that runs on the
// node (nil: none).
func (e *Executor) running(ctx context.Context, node string) (*batchv1.Job, error) {
	var jobs batchv1.JobList
	if err := e.c.List(ctx, &jobs, client.InNamespace(e.spec.Namespace), client.MatchingLabels{
		jobview.LabelManagedBy: jobview.ManagedBy, jobview.LabelNode: jobview.LabelValue(node),
	}); err != nil {
		return nil, fmt.Errorf("installer Jobs of node %s: %w", node, err)
	}
	for i := range jobs.Items {
		j := &jobs.Items[i]
		if jobview.NodeOf(j) == node && jobview.ViewOf(j).Running() {
			return j, nil
		}
	}
	return nil, nil
}

// Result returns the installer's answer for the Job's plan, once the
// Job has finished: the NodeResult its pod wrote. A Job still running
// gives ErrRunning; a failed Job without a readable result (its pods gone,
// killed before writing) ErrNoResult, with the Job's condition; a
// completed one without a readable result a Succeeded result (the
// installer exits 0 only then).
func (e *Executor) Result(ctx context.Context, job *batchv1.Job) (*plan.NodeResult, error) {
	j := &batchv1.Job{}
	if err := e.c.Get(ctx, client.ObjectKeyFromObject(job), j); err != nil {
		return nil, fmt.Errorf("read installer Job %s: %w", job.Name, err)
	}
	v := jobview.ViewOf(j)
	complete, failed := v.Condition(batchv1.JobComplete), v.Condition(batchv1.JobFailed)
	if complete == nil && failed == nil {
		return nil, fmt.Errorf("installer Job %s on node %s: %w", j.Name, jobview.NodeOf(j), ErrRunning)
	}
	pods, err := Pods(ctx, e.c, j)
	if err != nil {
		return nil, err
	}
	if res := ResultOf(pods, j.Labels[jobview.LabelShim]); res != nil {
		return res, nil
	}
	if complete != nil {
		return &plan.NodeResult{Outcome: plan.Succeeded, Node: jobview.NodeOf(j)}, nil
	}
	reason, message := v.Failure() // the Job's condition: no result was read
	return nil, fmt.Errorf("installer Job %s on node %s: %w (%s: %s)", j.Name, jobview.NodeOf(j), ErrNoResult, reason, message)
}
