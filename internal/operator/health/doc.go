// Package health is the fleet health gate's judgement: which workload pods
// on the nodes a rollout already updated are failing in a way that points
// at the container runtime, and whether there are too many of them to go
// on. It reads what the operator gives it (pods and FailedCreatePodSandBox
// Events, as the API server has them) and nothing else: no client, no
// context, no I/O, no clock read.
//
// Failures turns pods and Events into Failures; Thresholds.Check turns
// Failures into a Verdict (tripped or not, the nodes at their limit, and a
// bounded message naming pods and nodes, for a condition or an Event).
//
// Guarantees, checked by table tests and a fuzz test:
//   - at most one Failure per pod (its first signal by a fixed precedence:
//     a sandbox that could not be created, then a container waiting with
//     CreateContainerError, then RunContainerError, then a termination
//     with StartError, then ContainerCannotRun);
//   - only pods whose spec.runtimeClassName is one of the classes and
//     whose spec.nodeName is one of the nodes, and no signal seen before
//     since;
//   - no application failure counts (below);
//   - the Failures are sorted by node, then namespace and pod, and their
//     messages are at most MaxMessage bytes; the pods and Events passed in
//     are not modified;
//   - Check trips exactly when a limit is reached (PerNode failures on one
//     node, or Total in all), and its message names at most MaxNamed pods.
//
// # The runtime's failures and the application's
//
// The kubelet and containerd report a pod's failures at the step that
// failed, and the step tells whose failure it is. A FailedCreatePodSandBox
// Event (the kubelet's, from RunPodSandbox: "no runtime for ... is
// configured", a shim that did not start, a handler the node's containerd
// does not know, or the sandbox's network setup) means no container of the
// pod could exist. CreateContainerError is the kubelet's reason when the
// runtime's CreateContainer failed, RunContainerError when its
// StartContainer did; when a start fails containerd records the container
// as exited with reason StartError and exit code 128, never started (its
// startedAt is the Unix epoch), which the pod then shows as its last
// termination, usually under a CrashLoopBackOff (Docker's reason for the
// same was ContainerCannotRun). All of these happen before the
// application's first instruction, inside the runtime or its shim.
// Everything the application does once started is its own: a container
// that ran and exited has an exit code, a start time and the reason Error,
// Completed or OOMKilled, and its CrashLoopBackOff's last termination is
// one of those; such pods never count. Neither do the failures the kubelet
// has before the runtime is asked: CreateContainerConfigError (a missing
// ConfigMap, Secret or key, an unresolvable subPath), ErrImagePull,
// ImagePullBackOff, InvalidImageName and ErrImageNeverPull (the image), nor
// the pre-create and lifecycle hooks' errors. A container running again
// after a failed start has recovered: its last termination no longer
// counts. The line is not perfect: a command that does not exist in its
// image also fails at start (StartError, "executable file not found"),
// and a CNI plugin's failure is a sandbox failure; the thresholds, and
// looking only at updated nodes and at signals after since, keep one
// broken application from halting a rollout alone.
//
// The package imports neither client-go nor controller-runtime
// (TestImportBoundary): the API types of k8s.io/api and apimachinery are
// data, and allowed.
package health
