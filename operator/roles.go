package operator

import (
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shimkit/shimkit/operator/classes"
	"github.com/shimkit/shimkit/operator/metrics"
	"github.com/shimkit/shimkit/operator/nodegate"
	"github.com/shimkit/shimkit/operator/pin"
	"github.com/shimkit/shimkit/operator/results"
)

// deps are what every role of the reconciler uses: the client (writes and
// cached reads), the API server reader (reads the cache must not serve),
// the Event recorder, the options and the metrics. Each role below keeps
// its own state and methods, and shares these.
type deps struct {
	client   client.Client
	reader   client.Reader
	recorder events.EventRecorder
	opts     Options
	metrics  *metrics.Metrics
}

// The reconciler's roles, each a type of its own (no type of the operator
// has more than 15 methods: TestTypeSizes):
//
//   - resultReader reads what finished and stuck Jobs report, read ahead
//     or now (prefetch.go, results.go, imagepull.go);
//   - runtimeClasses reads the RuntimeClasses into a snapshot and writes
//     them, the migration's takeover included (classes.go,
//     runtimeclass.go, migration.go);
//   - revisionStore reads and writes the ControllerRevisions a revert
//     goes back to (revisions.go);
//   - batcher offers a Shim's installs to the node gate and admits nodes
//     (batchjob.go; the gate itself is package nodegate);
//   - jobStarter builds and creates the installer Jobs (jobspec.go,
//     batchjob.go, nodeverify.go);
//   - gateCheck judges the workloads for the health gate (healthgate.go;
//     read by package workload);
//   - reporter writes the status and the Events, paced (status.go,
//     events.go, delivery.go);
//   - executor carries out a decision's actions (actions.go): among them
//     the node labels, records and taints that decide.Records,
//     decide.Relabel, decide.StaleRecords, decide.Forget and decide.Taints
//     decide on the snapshot (results.go, preinstalled.go, records.go,
//     taint.go).
type (
	revisionStore struct{ *deps }
	batcher       struct {
		*deps
		gate *nodegate.Gate
	}
	jobStarter struct {
		*deps
		gate  *nodegate.Gate
		batch *batcher
	}
	gateCheck struct{ *deps }
	reporter  struct {
		*deps
		revisions *revisionStore
		// pending are the per-node events held back, statusPace when each
		// Shim's status was last written (both pace a rollout's writes).
		pending    pendingEvents
		statusPace pace
	}
	executor struct {
		*deps
		retries *retries
	}
)

// newRoles wires the roles of r onto d.
func newRoles(r *Reconciler, d *deps, gate *nodegate.Gate) {
	r.deps, r.gate = d, gate
	r.resolve = pin.New(d.reader, d.recorder, d.opts.Resolver, d.opts.Namespace, d.opts.resolveBackoff)
	r.reads = results.New(d.reader, d.opts.Namespace)
	r.classes = classes.New(d.client, d.reader, d.recorder)
	r.revisions = &revisionStore{deps: d}
	r.batch = &batcher{deps: d, gate: gate}
	r.starter = &jobStarter{deps: d, gate: gate, batch: r.batch}
	r.gateCheck = &gateCheck{deps: d}
	r.report = &reporter{deps: d, revisions: r.revisions}
	r.exec = &executor{deps: d, retries: &r.retries}
}
