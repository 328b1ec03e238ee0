package operator_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/opencontainers/go-digest"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	nodev1 "k8s.io/api/node/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shimkit/shimkit/installer/plan"
	"github.com/shimkit/shimkit/internal/frontend/plugin"
	"github.com/shimkit/shimkit/internal/operator/results"
	"github.com/shimkit/shimkit/internal/testutil"
	"github.com/shimkit/shimkit/nodelabel"
	"github.com/shimkit/shimkit/operator"
	"github.com/shimkit/shimkit/operator/api/v1alpha1"
)

// shimFrom is a Shim of testdata/shims, ready to create.
func shimFrom(t testing.TB, file string) *v1alpha1.Shim {
	s := readShim(t, file)
	s.UID = ""
	return s
}

// TestJobCarriesPlan: the installer Job gets its node's plan as one
// document, an annotation of its pod template mounted as the file its
// args name, and nothing through the environment; its result comes back
// as the termination message.
func TestJobCarriesPlan(t *testing.T) {
	env := startCluster(t)
	ctx := context.Background()
	createNodes(t, env.Client, 1, nil, "n")
	startOperatorResolving(t, env, operator.StaticResolver{"registry.example/shims/kata:3.12.0": digest.Digest("sha256:" + strings.Repeat("9", 64))}, "shim-registry")
	if err := env.Client.Create(ctx, shimFrom(t, "kata")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "the Job", func() (bool, string) { return len(jobsOf(t, env.Client, "kata")) == 1, "" })
	j := jobsOf(t, env.Client, "kata")[0]
	pod := j.Spec.Template
	doc := pod.Annotations[operator.PlanAnnotation]
	p, err := plan.Decode([]byte(doc))
	if err != nil {
		t.Fatalf("the plan annotation: %v\n%s", err, doc)
	}
	shim := getShim(t, env.Client, "kata")
	if p.Shim.Name != "kata" || p.Shim.UID != string(shim.UID) || p.Node != "n-0000" || p.SpecHash != shim.Status.SpecHash && shim.Status.SpecHash != "" ||
		len(p.Handlers) != 3 || p.Artifact.PullSecretPath == "" {
		t.Errorf("plan %+v", p)
	}
	c := pod.Spec.Containers[0]
	for _, e := range c.Env {
		if strings.HasPrefix(e.Name, "SHIMKIT_") {
			t.Errorf("environment variable %s: the plan is the one contract", e.Name)
		}
	}
	planArg := c.Args[slices.Index(c.Args, "--plan")+1]
	mounted := false
	for _, m := range c.VolumeMounts {
		for _, v := range pod.Spec.Volumes {
			if v.Name != m.Name || v.DownwardAPI == nil {
				continue
			}
			for _, item := range v.DownwardAPI.Items {
				mounted = mounted || filepath.Join(m.MountPath, item.Path) == planArg &&
					item.FieldRef.FieldPath == "metadata.annotations['"+operator.PlanAnnotation+"']"
			}
		}
	}
	if c.Args[0] != "install" || !mounted {
		t.Errorf("args %v do not name the mounted plan; volumes %+v, mounts %+v", c.Args, pod.Spec.Volumes, c.VolumeMounts)
	}
	if !slices.Contains(c.Args, "--result") || c.Args[slices.Index(c.Args, "--result")+1] != c.TerminationMessagePath ||
		c.TerminationMessagePolicy != corev1.TerminationMessageReadFile {
		t.Errorf("the result does not go to the termination message: args %v, path %q, policy %q", c.Args, c.TerminationMessagePath, c.TerminationMessagePolicy)
	}
	if r := j.Spec.PodFailurePolicy.Rules[0]; !slices.Equal(r.OnExitCodes.Values, []int32{2, 3, 4, 5, 6}) || r.Action != batchv1.PodFailurePolicyActionFailJob {
		t.Errorf("pod failure policy %+v", r)
	}
}

// TestMultiHandlerRuntimeClasses: a Shim with three handlers publishes
// three RuntimeClasses onto the nodes with its one label; a handler
// dropped from the spec loses its RuntimeClass; on delete all go last,
// after every node is clean.
func TestMultiHandlerRuntimeClasses(t *testing.T) {
	env := startCluster(t)
	ctx := context.Background()
	createNodes(t, env.Client, 3, nil, "n")
	startKubelet(t, env, 50*time.Millisecond, nil)
	startOperatorResolving(t, env, operator.StaticResolver{"registry.example/shims/kata:3.12.0": digest.Digest("sha256:" + strings.Repeat("9", 64))}, "shim-registry")
	if err := env.Client.Create(ctx, shimFrom(t, "kata")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 30*time.Second, "Ready", ready(env.Client, "kata"))
	want := map[string]string{"kata": "kata", "kata-qemu": "kata-qemu", "kata-clh": "kata-clh"}
	for name, handler := range want {
		rc := &nodev1.RuntimeClass{}
		if err := env.Client.Get(ctx, client.ObjectKey{Name: name}, rc); err != nil {
			t.Fatal(err)
		}
		if rc.Handler != handler || rc.Scheduling.NodeSelector[nodelabel.Key("kata")] != nodelabel.Installed {
			t.Errorf("RuntimeClass %s: handler %s, scheduling %+v", name, rc.Handler, rc.Scheduling)
		}
		if tol := rc.Scheduling.Tolerations; (name == "kata-clh") != (len(tol) == 1) {
			t.Errorf("RuntimeClass %s: tolerations %+v", name, tol)
		}
	}
	if c := condition(getShim(t, env.Client, "kata"), v1alpha1.ConditionReady); !strings.Contains(c.Message, "kata, kata-qemu, kata-clh") {
		t.Errorf("Ready does not name the RuntimeClasses: %s", c.Message)
	}

	updateShim(t, env.Client, "kata", func(s *v1alpha1.Shim) { s.Spec.Handlers = s.Spec.Handlers[:1] })
	waitFor(t, 30*time.Second, "kata-clh gone, Ready again", func() (bool, string) {
		err := env.Client.Get(ctx, client.ObjectKey{Name: "kata-clh"}, &nodev1.RuntimeClass{})
		ok, msg := ready(env.Client, "kata")()
		return apierrors.IsNotFound(err) && ok, msg
	})

	if err := env.Client.Delete(ctx, getShim(t, env.Client, "kata")); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		var nodes corev1.NodeList
		if err := env.Client.List(ctx, &nodes, client.MatchingLabelsSelector{Selector: nodelabel.AnySelector("kata")}); err != nil {
			t.Fatal(err)
		}
		gone := 0
		for _, name := range []string{"kata", "kata-qemu"} {
			if apierrors.IsNotFound(env.Client.Get(ctx, client.ObjectKey{Name: name}, &nodev1.RuntimeClass{})) {
				gone++
			}
		}
		if gone > 0 && len(nodes.Items) > 0 {
			t.Fatalf("%d RuntimeClasses gone while %d nodes still have the shim", gone, len(nodes.Items))
		}
		if gone == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("RuntimeClasses not deleted: %d nodes labelled", len(nodes.Items))
		}
	}
}

// failedResult is what an installer reports when it refuses or fails.
func failedResult(node string, outcome plan.Outcome, reason plan.Reason, message string) *plan.NodeResult {
	return &plan.NodeResult{
		APIVersion: plan.APIVersion, Kind: plan.KindNodeResult, Shim: plan.ShimRef{Name: "spin"}, Node: node, Operation: plan.OpInstall,
		Outcome: outcome, Reason: reason, Message: message,
	}
}

// TestFailedJobResultInStatus: the installer's result, read from a failed
// pod's termination message, is the node's reason and message in
// status.failingNodes, Degraded and a Warning Event, whatever the reason:
// the node-side refusals (Conflict, Reserved, ConcurrentEdit) pass through
// as they are.
func TestFailedJobResultInStatus(t *testing.T) {
	env := startCluster(t)
	ctx := context.Background()
	createNodes(t, env.Client, 5, nil, "n")
	failures := map[string]*plan.NodeResult{
		"n-0000": failedResult("n-0000", plan.Failed, plan.ReasonConflict,
			"/etc/containerd/config.toml: handler spin exists and shimkit did not write it (set adoptHandler to take it over)"),
		"n-0001": failedResult("n-0001", plan.RolledBack, plan.ReasonConfigInvalid, "/etc/containerd/config.toml:12: expected '.' or '=', but got '\\n' instead"),
		"n-0002": failedResult("n-0002", plan.Failed, plan.ReasonReserved, "handler spin: runtime type io.containerd.runc.v2 is the node's default runtime"),
		"n-0003": failedResult("n-0003", plan.RollbackFailed, plan.ReasonConcurrentEdit,
			"/etc/containerd/config.toml: changed by another writer since shimkit wrote it; left as it is"),
	}
	startPodKubelet(t, env, 50*time.Millisecond, func(_ context.Context, j *batchv1.Job) testutil.PodRun {
		node := j.Spec.Template.Spec.NodeName
		if r := failures[node]; r != nil {
			return testutil.ResultRun(t, 3, r)
		}
		return testutil.ResultRun(t, 0, &plan.NodeResult{APIVersion: plan.APIVersion, Kind: plan.KindNodeResult, Outcome: plan.Succeeded, Digest: "sha256:" + strings.Repeat("a", 64)})
	})
	startOperator(t, env)
	if err := env.Client.Create(ctx, newShim("spin", "spin", "5", nil)); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 30*time.Second, "four nodes failing", func() (bool, string) {
		s := getShim(t, env.Client, "spin")
		return len(s.Status.FailingNodes) == len(failures), fmt.Sprintf("%+v", s.Status)
	})
	s := getShim(t, env.Client, "spin")
	degraded := condition(s, v1alpha1.ConditionDegraded)
	if degraded.Status != metav1.ConditionTrue || degraded.Reason != v1alpha1.ReasonNodeFailed {
		t.Errorf("Degraded %+v", degraded)
	}
	for _, f := range s.Status.FailingNodes {
		want := failures[f.Node]
		if want == nil || f.Reason != string(want.Reason) || f.Message != want.Message {
			t.Errorf("failingNodes: %+v, want %+v", f, want)
			continue
		}
		if part := f.Node + " (" + string(want.Reason) + ")"; !strings.Contains(degraded.Message, part) {
			t.Errorf("Degraded does not name %s: %s", part, degraded.Message)
		}
	}
	waitFor(t, 10*time.Second, "a Warning Event per failed node", func() (bool, string) {
		notes := eventNotes(t, env.Client, "spin", corev1.EventTypeWarning)
		for node, r := range failures {
			want := "node " + node + ": " + string(r.Reason) + ": " + r.Message
			if !slices.Contains(notes, want) {
				return false, fmt.Sprintf("no %q in %v", want, notes)
			}
		}
		return true, ""
	})
	waitFor(t, 10*time.Second, "an Installed event naming the digest", func() (bool, string) {
		notes := eventNotes(t, env.Client, "spin", corev1.EventTypeNormal)
		return slices.ContainsFunc(notes, func(n string) bool { return strings.Contains(n, "sha256:aaaa") }), fmt.Sprint(notes)
	})
}

// eventNotes lists the notes of the Shim's events of a type.
func eventNotes(t testing.TB, c client.Client, shim, eventType string) []string {
	t.Helper()
	var out []string
	for _, e := range eventsOf(t, c, shim) {
		if e.Type == eventType {
			out = append(out, e.Note)
		}
	}
	return out
}

// eventsOf lists the Events about the Shim.
func eventsOf(t testing.TB, c client.Client, shim string) []eventsv1.Event {
	t.Helper()
	var evs eventsv1.EventList
	if err := c.List(context.Background(), &evs); err != nil {
		t.Fatal(err)
	}
	return slices.DeleteFunc(evs.Items, func(e eventsv1.Event) bool { return e.Regarding.Name != shim })
}

// TestRealInstallerFailureInStatus: the real installer, run for the Job's
// pod against a node whose containerd config does not parse, fails; its
// reason and message reach the Shim's status and Events.
func TestRealInstallerFailureInStatus(t *testing.T) {
	shim, cfg, run := brokenConfigNode(t)
	env := startCluster(t)
	ctx := context.Background()
	createNodes(t, env.Client, 1, nil, "n")
	k := startPodKubelet(t, env, 0, run)
	startOperatorWith(t, env, env.Config, func(o *operator.Options) { o.Logs = k })
	if err := env.Client.Create(ctx, shim); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 60*time.Second, "the node failing", func() (bool, string) {
		s := getShim(t, env.Client, "spin")
		return len(s.Status.FailingNodes) == 1, fmt.Sprintf("%+v", s.Status)
	})
	f := getShim(t, env.Client, "spin").Status.FailingNodes[0]
	if f.Node != "n-0000" || f.Reason != string(plan.ReasonConfigInvalid) || !strings.Contains(f.Message, "/etc/containerd/config.toml:3") {
		t.Errorf("failingNodes[0] = %+v, want ConfigInvalid naming /etc/containerd/config.toml:3", f)
	}
	waitFor(t, 10*time.Second, "the Warning Event", func() (bool, string) {
		notes := eventNotes(t, env.Client, "spin", corev1.EventTypeWarning)
		return slices.ContainsFunc(notes, func(n string) bool {
			return strings.HasPrefix(n, "node n-0000: ConfigInvalid: ") && strings.Contains(n, "config.toml:3")
		}), fmt.Sprint(notes)
	})
	if data, err := os.ReadFile(cfg); err != nil || string(data) != "version = 2\n\n[plugins\n" {
		t.Errorf("the node's config changed: %q, %v", data, err)
	}
	failedLogKept(t, env, getShim(t, env.Client, "spin"), "n-0000")
}

// brokenConfigNode is a node's root whose containerd config is not valid
// TOML (at cfg), the real installer run on it, and a Shim spin of an
// artifact served here: its install fails with ConfigInvalid.
func brokenConfigNode(t *testing.T) (shim *v1alpha1.Shim, cfg string, run func(context.Context, *batchv1.Job) testutil.PodRun) {
	t.Helper()
	hostRoot := t.TempDir()
	cfg = filepath.Join(hostRoot, "etc/containerd/config.toml")
	if err := os.MkdirAll(filepath.Dir(cfg), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cfg, []byte("version = 2\n\n[plugins\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	art := testutil.NewShimArchive(t, "spin", "/bin/true", nil)
	srv := testutil.StartFileServer(t)
	shim = newShim("spin", "spin", "1", nil)
	shim.Spec.FetchStrategy.AnonHTTP.Location, shim.Spec.FetchStrategy.AnonHTTP.SHA256 = srv.Add("/spin.tar.gz", art.Data), art.SHA256
	return shim, cfg, testutil.RealInstaller(t, func(*batchv1.Job) string { return hostRoot })
}

// failedLogKept: the failed Job is kept a day, and once it is gone
// kubectl shimkit logs prints the operator's copy of its installer's log.
func failedLogKept(t *testing.T, env *testutil.Env, shim *v1alpha1.Shim, node string) {
	ctx := context.Background()
	var job batchv1.Job
	waitFor(t, 10*time.Second, "the failed Job kept 24h and its log copied", func() (bool, string) {
		jobs := jobsOf(t, env.Client, shim.Name)
		if len(jobs) != 1 {
			return false, fmt.Sprintf("%d Jobs", len(jobs))
		}
		job = jobs[0]
		kept, err := results.ReadLog(ctx, env.Client, jobNamespace, shim, node)
		ttl := job.Spec.TTLSecondsAfterFinished
		return ttl != nil && *ttl == 86400 && kept != nil, fmt.Sprintf("ttl %v, copy %v (%v)", ttl, kept != nil, err)
	})
	if err := env.Client.Delete(ctx, &job, client.PropagationPolicy(metav1.DeletePropagationBackground)); err != nil {
		t.Fatal(err)
	}
	kubeconfig := testutil.WriteKubeconfig(t, env.Config, filepath.Join(t.TempDir(), "kubeconfig"))
	code, out, errOut := pluginRun(kubeconfig, "logs", shim.Name, "--node", node, "-n", jobNamespace)
	t.Logf("kubectl shimkit logs: exit %d\n%s%s", code, errOut, out)
	if code != plugin.ExitOK || !bytes.Contains(out, []byte("(ConfigInvalid: retrying cannot change this)")) || !bytes.Contains(errOut, []byte("the operator's copy of the log of Job "+job.Name)) {
		t.Errorf("logs after the Job is gone: exit %d, want the copy of %s's log with its ConfigInvalid", code, job.Name)
	}
}
