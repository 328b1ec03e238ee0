package operator

import (
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shimkit/shimkit/internal/operator/phase"

	"github.com/shimkit/shimkit/internal/operator/classes"
	"github.com/shimkit/shimkit/internal/operator/metrics"
	"github.com/shimkit/shimkit/internal/operator/nodegate"
	"github.com/shimkit/shimkit/internal/operator/pin"
	"github.com/shimkit/shimkit/internal/operator/results"
	"github.com/shimkit/shimkit/internal/operator/revision"
	"github.com/shimkit/shimkit/internal/operator/status"
)

// deps are what every role of the reconciler uses: the client (writes and
// cached reads), the API server reader (reads the cache must not serve),
// the Event recorder, the options and the metrics. Each role below keeps
// its own state and methods, and shares these.
type deps struct {
	client   client.Client
	reader   client.Reader
	recorder *phase.Recorder
	opts     Options
	metrics  *metrics.Metrics
}

// The reconciler's roles, each a type of its own (no type of the operator
// has more than 15 methods: TestTypeSizes). Those with a package of
// their own: pin.Pinner pins the artifact; results.Reader reads what the
// installer Jobs report; classes.Classes reads and writes the
// RuntimeClasses; revision.Store keeps the revisions a revert goes back
// to; status.Reporter writes the status, Events and metrics. Here:
//
//   - batcher offers a Shim's installs to the node gate and admits nodes
//     (batchjob.go; the gate itself is package nodegate);
//   - jobStarter builds and creates the installer Jobs (start.go,
//     jobspec.go, batchjob.go);
//   - gateCheck reads the workloads the health gate judges and the pods a
//     removal waits for (healthgate.go; read by package workload, judged
//     by package decide);
//   - executor carries out a decision's actions (executor.go): package
//     decide decides them on the snapshot.
type (
	batcher struct {
		*deps
		gate *nodegate.Gate
	}
	jobStarter struct {
		*deps
		gate  *nodegate.Gate
		batch *batcher
		exec  *executor
	}
	gateCheck struct{ *deps }
	executor  struct {
		*deps
		retries *retries
	}
)

// newRoles wires the roles of r onto d.
func newRoles(r *Reconciler, d *deps, gate *nodegate.Gate) {
	r.deps, r.gate = d, gate
	r.resolve = pin.New(d.reader, d.opts.Resolver, d.opts.Namespace, d.opts.resolveBackoff)
	r.reads = results.New(d.reader, d.opts.Namespace)
	r.classes = classes.New(d.client, d.reader, d.recorder)
	r.revisions = revision.New(d.client, d.reader, d.opts.Namespace)
	r.batch = &batcher{deps: d, gate: gate}
	r.exec = &executor{deps: d, retries: &r.retries}
	r.starter = &jobStarter{deps: d, gate: gate, batch: r.batch, exec: r.exec}
	r.gateCheck = &gateCheck{deps: d}
	r.report = status.New(d.client, d.recorder, d.metrics, r.revisions)
}
