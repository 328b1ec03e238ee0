package plugin

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/spf13/cobra"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shimkit/shimkit/internal/operator/jobview"
	"github.com/shimkit/shimkit/internal/operator/nodejob"
	"github.com/shimkit/shimkit/internal/operator/results"
	"github.com/shimkit/shimkit/operator/api/v1alpha1"
)

// logsFlags are logs' own flags.
type logsFlags struct {
	node     string
	previous bool
	follow   bool
}

func logsCommand(o *options) *cobra.Command {
	f := &logsFlags{}
	cmd := &cobra.Command{
		Use:   "logs NAME --node NODE",
		Short: "The installer's log of the Shim on a node",
		Long: `logs prints the log of the newest installer run of the Shim on the node
(--previous: the run before it): from its pod while its Job is kept (1 h
after a success, 24 h after a failure: the chart's jobTTL and
failedJobTTL), else from the copy the operator keeps of the node's last
failed run (a ConfigMap in the operator's namespace, its last 64 KiB,
deleted with the Shim).`,
		Example: `  kubectl shimkit logs spin --node worker-3
  kubectl shimkit logs spin --node worker-3 -f`,
		Args: exactlyName,
		PreRunE: func(*cobra.Command, []string) error {
			if f.node == "" {
				return usagef("--node is required")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			r, err := o.reader()
			if err != nil {
				return err
			}
			return o.explain(runLogs(cmd.Context(), o, r, args[0], f))
		},
	}
	cmd.Flags().StringVar(&f.node, "node", "", "the node whose installer log to print")
	cmd.Flags().BoolVar(&f.previous, "previous", false, "the installer run before the newest one")
	cmd.Flags().BoolVarP(&f.follow, "follow", "f", false, "go on printing the log as the installer writes it")
	return cmd
}

// errNoLog: neither a Job's pod nor a retained copy holds the run's log.
var errNoLog = errors.New("no installer log")

func runLogs(ctx context.Context, o *options, r reader, name string, f *logsFlags) error {
	shim := &v1alpha1.Shim{}
	if err := r.c.Get(ctx, client.ObjectKey{Name: name}, shim); err != nil {
		return fmt.Errorf("Shim %s: %w", name, err)
	}
	jobs, err := r.nodeJobs(ctx, shim, f.node)
	if err != nil {
		return err
	}
	i := 0
	if f.previous {
		i = 1
	}
	podErr := errNoLog
	if i < len(jobs) {
		if podErr = r.podLog(ctx, jobs[i], f.follow, o.streams.Out); podErr == nil {
			return nil
		}
	}
	kept, err := results.ReadLog(ctx, r.c, r.namespace, shim, f.node)
	switch {
	case err != nil:
		return err
	case kept != nil && (i >= len(jobs) || kept.Job == jobs[i].Name):
		if !errors.Is(podErr, errNoLog) {
			fmt.Fprintf(o.streams.ErrOut, "(the pod's log: %v)\n", podErr)
		}
		fmt.Fprintf(o.streams.ErrOut, "(the operator's copy of the log of Job %s, which failed %s at %s)\n", kept.Job, kept.Reason, kept.Time.Format(time.RFC3339))
		_, err := io.WriteString(o.streams.Out, kept.Log)
		return err
	}
	if !errors.Is(podErr, errNoLog) {
		return podErr
	}
	return fmt.Errorf("node %s: %w of the Shim %s (%d installer Jobs kept; a successful run's log goes with its Job)", f.node, errNoLog, name, len(jobs))
}

// nodeJobs are the Shim's installer Jobs on the node, newest first.
func (r reader) nodeJobs(ctx context.Context, shim *v1alpha1.Shim, node string) ([]*batchv1.Job, error) {
	var list batchv1.JobList
	if err := r.c.List(ctx, &list, client.InNamespace(r.namespace), client.MatchingLabels{jobview.LabelManagedBy: jobview.ManagedBy}); err != nil {
		return nil, fmt.Errorf("list Jobs in %s: %w", r.namespace, err)
	}
	var out []*batchv1.Job
	for i := range list.Items {
		j := &list.Items[i]
		if _, ok := jobview.For(j, shim); ok && jobview.NodeOf(j) == node {
			out = append(out, j)
		}
	}
	slices.SortFunc(out, func(a, b *batchv1.Job) int {
		if jobview.Newer(a, b) {
			return -1
		}
		return 1
	})
	return out, nil
}

// podLog copies the log of the Job's newest pod (errNoLog: it has none;
// another error: it cannot be read now, the kubelet being away).
func (r reader) podLog(ctx context.Context, j *batchv1.Job, follow bool, w io.Writer) error {
	var pods corev1.PodList
	if err := r.c.List(ctx, &pods, client.InNamespace(r.namespace), client.MatchingLabels{nodejob.LabelControllerUID: string(j.UID)}); err != nil {
		return fmt.Errorf("pods of Job %s: %w", j.Name, err)
	}
	newest := nodejob.NewestPod(pods.Items)
	if newest == nil {
		return errNoLog
	}
	stream, err := r.cs.CoreV1().Pods(r.namespace).GetLogs(newest.Name, &corev1.PodLogOptions{Container: nodejob.Container, Follow: follow}).Stream(ctx)
	if apierrors.IsNotFound(err) || apierrors.IsBadRequest(err) {
		return errNoLog // gone, or its container never started
	}
	if err != nil {
		return fmt.Errorf("log of pod %s: %w", newest.Name, err)
	}
	defer stream.Close()
	_, err = io.Copy(w, stream)
	return err
}
