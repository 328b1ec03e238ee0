package operator_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shimkit/shimkit/internal/operator/jobview"
	"github.com/shimkit/shimkit/nodelabel"
	"github.com/shimkit/shimkit/operator"
)

// stuckLogs is a JobLogs whose reads never end before the operator
// stops: an operator stopped between recording a failure and keeping its
// log.
type stuckLogs struct{ reading chan struct{} }

func (l *stuckLogs) JobLog(ctx context.Context, job *batchv1.Job) ([]byte, error) {
	select {
	case l.reading <- struct{}{}:
	default:
	}
	<-ctx.Done()
	return nil, ctx.Err()
}

var _ operator.JobLogs = (*stuckLogs)(nil)

// TestFailedLogKeptByTheNextOperator: an operator that stops after it
// recorded a node's failure and before it kept the failed Job's log
// leaves the keeping to the next one (the failure is not recorded twice;
// the Job says when its log is kept).
func TestFailedLogKeptByTheNextOperator(t *testing.T) {
	shim, _, run := brokenConfigNode(t)
	env := startCluster(t)
	ctx := context.Background()
	createNodes(t, env.Client, 1, nil, "n")
	k := startPodKubelet(t, env, 0, run)
	stuck := &stuckLogs{reading: make(chan struct{}, 1)}
	stop := startOperatorWith(t, env, env.Config, func(o *operator.Options) { o.Logs = stuck })
	if err := env.Client.Create(ctx, shim); err != nil {
		t.Fatal(err)
	}
	select {
	case <-stuck.reading:
	case <-time.After(60 * time.Second):
		t.Fatal("the operator never read the failed Job's log")
	}
	uid := getShim(t, env.Client, "spin").UID
	waitFor(t, 10*time.Second, "the node's failure recorded", func() (bool, string) {
		node := &corev1.Node{}
		if err := env.Client.Get(ctx, client.ObjectKey{Name: "n-0000"}, node); err != nil {
			return false, err.Error()
		}
		f := nodelabel.FailureOf(node, "spin", uid)
		return f != nil, fmt.Sprint(node.Annotations)
	})
	stop()
	jobs := jobsOf(t, env.Client, "spin")
	if len(jobs) != 1 || jobs[0].Annotations[jobview.AnnotationLogKept] != "" {
		t.Fatalf("after the first operator: %d Jobs, annotations %v; want one, its log not kept", len(jobs), jobs[0].Annotations)
	}

	startOperatorWith(t, env, env.Config, func(o *operator.Options) { o.Logs = k })
	failedLogKept(t, env, getShim(t, env.Client, "spin"), "n-0000")
}
