package nodejob_test

import (
	"context"
	"errors"
	"fmt"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shimkit/shimkit/installer/plan"
	"github.com/shimkit/shimkit/operator/nodejob"
)

// An operator with its own custom resource runs a plan it built on one
// node, and later reads what the installer did. Nothing here names the
// Shim type.
func ExampleExecutor() {
	run := func(ctx context.Context, c client.Client) error {
		p := plan.New(plan.ShimRef{Name: "wasmtime", UID: "uid-of-my-runtime-object"}, plan.OpInstall)
		p.Node, p.SpecHash = "worker-1", "v1"
		p.Artifact = &plan.Artifact{Type: plan.SourceHTTP, URL: "https://artifacts.example/wasmtime.tar.gz", Digest: "sha256:…"}
		p.Files = []plan.File{{Source: "containerd-shim-*", Path: "containerd-shim-wasmtime-v1", Mode: 0o755}}
		p.Handlers = []plan.Handler{{Name: "wasmtime", RuntimeType: "io.containerd.wasmtime.v1", RuntimePath: plan.BundleDirPlaceholder + "/containerd-shim-wasmtime-v1"}}

		e := nodejob.NewExecutor(c, nodejob.Spec{Namespace: "runtimes", Image: "shimkit-installer:v0.1.0", ServiceAccount: "shimkit-installer"})
		job, err := e.Start(ctx, p)
		if errors.Is(err, nodejob.ErrNodeBusy) {
			return nil // another installer runs there: try again later
		}
		if err != nil {
			return err
		}
		// ... on the Job's next watch event:
		res, err := e.Result(ctx, job)
		switch {
		case errors.Is(err, nodejob.ErrRunning):
			return nil
		case err != nil:
			return err
		}
		fmt.Println(res.Outcome, res.Reason, res.Message)
		return nil
	}
	_ = run
}
