// Package operator is the reference Shim controller: it reconciles Shim
// resources (containerd.x-k8s.io/v1alpha1) by running the installer as one
// Job per node, rolling under the Shim's rollout strategy, labelling nodes
// that have the shim, and publishing the RuntimeClasses that schedule onto
// them. Another operator can add it to its own manager with
// Reconciler.SetupWithManager.
//
// # A reconcile
//
// A reconcile reads once, decides, then acts: every read of a reconcile
// comes before its first write, and every write and Event after its
// decision (package phase marks the two phases; the envtest suites run
// every reconcile through phase.Checked and phase.Recorder, which fail a
// write or an Event made before the decision is complete and a read made
// after). The decision is one value, decide.Plan, made by one pure
// function; the rooms it goes through are packages of their own, imported
// one way (operator → its roles → decide → shimspec, nodeview; none
// imports operator; decide, and every package of shimkit it links,
// imports no client, context or clock: decide.TestPure). Nothing of
// decide, shimspec, nodeview or rollout runs once the executor acts, but
// what renders the plan into objects (hack/plancheck proves it on the
// code):
//
//	observe              the snapshot (decide.Snapshot): the Shim, a
//	  │                  decide.NodeView per node (decide.NodeViewOf: label,
//	  │                  hash, records read by nodelabel/record, its newest
//	  │                  Jobs read by jobview, the results of those that
//	  │                  finished, read by results.Reader), the node gate
//	  │                  as the Shim sees it (nodegate.View: the nodes
//	  │                  other Shims' installers hold, their offers), the
//	  │                  pinned artifact and when it is resolved again
//	  │                  (pin.Pinner), a failed rollout's previous revision
//	  │                  as the target (revision.Store), what these found
//	  │                  to tell (decide.Notice), the pods of running Jobs
//	  │                  that cannot pull, the RuntimeClasses
//	  │                  (classes.Classes), every Shim, when the status was
//	  │                  last written; the health gate's verdict on the
//	  │                  workloads of updated nodes (read by package
//	  │                  workload, judged by decide.JudgeGate)
//	  ▼
//	decide.PlanInstall   pure, one decide.Plan: a retry request, the stuck
//	decide.PlanRemoval   pulls and the finished Jobs as typed actions
//	  │                  (decide.Records); each node's state, the install
//	  │                  plans (shimspec.Build), the nodes to start under
//	  │                  maxUpdate (rollout.Planner), halts, refusals,
//	  │                  pause, windows, steps and bakes, the gate's halt
//	  │                  and revert (decide.Decide, decide.Delivery); the
//	  │                  stale records, relabels, RuntimeClasses, the batch
//	  │                  offer and its wait, each Job to start with the
//	  │                  node gate's reservation it needs and its batch
//	  │                  partners (decide.Start), taints, the nodes due for
//	  │                  verification, the status with the revision it
//	  │                  records (decide.StatusPlan), the Events, the
//	  │                  requeue, a deleted Shim's leftovers; golden-,
//	  │                  table- and fuzz-tested
//	  ▼
//	carryOut             the plan in its order (the executor holds no
//	carryOutRemoval      policy): the actions, the finalizer,
//	  │                  RuntimeClasses (classes.Classes, each write with
//	  │                  the resourceVersion or UID read as its
//	  │                  precondition), the Jobs whose reservations the node
//	  │                  gate commits (nodegate.Gate.Reserve; nodejob.Build:
//	  │                  one installer per node, batches across Shims),
//	  │                  labels (nodelabel), the status and Events
//	  │                  (status.Reporter, paced). A write that finds what
//	  │                  was read changed (a RuntimeClass, a node another
//	  │                  Shim took) is not forced: the plan's status, which
//	  │                  assumed it, is not written, and the Shim comes back
//	  ▼                  soon to plan again
//	requeue              the plan's (decide.Plan.Requeue: the artifact's
//	                     next resolution, the next verification, a bake's
//	                     end, the next window, the batch window)
//
// # Lifecycle
//
// Install: the targeted nodes that lack the current spec hash are handed
// to rollout.Planner, which limits them to maxUpdate, counting Jobs in
// flight. A node is targeted when it matches (spec.nodeSelector;
// control-plane nodes only when the selector names
// node-role.kubernetes.io/control-plane) and is eligible: Linux (its
// kubernetes.io/os label, else status.nodeInfo.operatingSystem), running
// one of the Shim's container runtimes (status.nodeInfo.
// containerRuntimeVersion containerd://... or cri-o://...;
// spec.containerRuntimes, by default containerd, and cri-o too for OCI
// runtimes run through BinaryName), of a platform the Shim has an
// artifact for; each node's plan names its runtime. A value the node does not
// report rules nothing out. A matching node that is not eligible is
// skipped, not failed: status.skippedNodes and status.skipped count and
// name them by reason (NotLinux, RuntimeNotSupported, NoArtifact), and the
// Ready message sums them up. A node installed at an older hash is
// an upgrade. A node's installer runs the Shim's canary pod (spec.canary,
// on by default, with the RuntimeClass CanaryRuntimeClass) before it
// commits. The canary's RuntimeClass is published in the reconcile that
// starts a node's install, before its Job, and kept while a node has the
// shim or a Job is changing one; a Shim with no such node (a refused spec,
// a rollout halted before any node had it) has none. When a node's Job
// succeeds, the node gets the shim's label (package nodelabel) and counts
// as updated; when one fails (a failed canary included), the Shim is
// Degraded and no new node starts until the failure is resolved (the retry
// annotation) or the spec changes; a node whose canary failed is also
// tried again when spec.canary changes (the canary is not part of the spec
// hash: the nodes installed are left alone). The failure, verification and
// label records a Shim leaves on nodes name its UID and are removed when it
// is deleted (decide.StaleRecords, decide.Forget): a Shim created again under the same name starts
// clean. The RuntimeClasses are
// applied once the first node has the shim, scheduling only onto labelled
// nodes. Requeues continue until every node is done; then Ready is True.
//
// Nodes that join and match are installed; nodes that stop matching (or
// stop being eligible) are uninstalled.
//
// A spec whose artifact cannot be resolved or verified (ResolveFailed,
// SignatureMissing, SignatureInvalid, InsecureTransport) is rolled out to
// no node either. The resolution that failed is not made again (no
// download, no registry request) until the spec, the resolve annotation,
// the resolve interval, the pull secret or the trusted root changes, or
// its backoff passes (30s, doubled per failure, at most 10m); an HTTP
// artifact's signature is read before the artifact, which is not
// downloaded when the signature is missing. A refusal makes one Warning
// Event, when the status first shows it.
//
// Some specs pass the API server's validation but are rolled out to no
// node: a pull secret outside the operator's namespace (Degraded and Ready
// False with reason PullSecretNamespace: the Jobs run in that namespace
// and a pod mounts only its own namespace's Secrets; the operator reads no
// Secret anywhere) and containerd's own runc shim type without
// runtimeOptions.BinaryName (ReservedRuntimeType: CEL cannot read keys of
// the free-form runtimeOptions, so the operator checks it, as BuildPlan
// does for embedders). Uninstalls go on.
//
// Uninstall: a finalizer keeps a deleted Shim until every labelled node was
// uninstalled, rolling under the same strategy (install Jobs still running
// finish first). A node's label turns to "uninstalling" before its Job
// starts, so no new pod lands there; the label goes when the Job succeeds.
// Then the RuntimeClasses are deleted and the finalizer removed; a Shim
// released so is not read again, though the cache still has it. A node
// where pods of the Shim's RuntimeClasses run (the API server's pods, or
// the sandboxes the node's installer found: HandlerInUse) is held: its
// label stays as its pods were admitted with it (a restarted kubelet
// re-checks it), its uninstall waits for them, the Shim's Ready and
// Reconciling conditions naming the nodes and pods (reason HandlerInUse),
// while the other nodes go on. New pods are kept off by a fence a kubelet
// does not re-check: a deleted Shim's RuntimeClasses select no node
// ("fenced"), and a node that left the Shim's selection gets the Shim's
// NoSchedule taint until its uninstall starts. With spec.deletePolicy
// Evict a deleted Shim's pods are evicted through the Eviction API.
//
// Disruption: with rolloutStrategy.disruption Cordon or Drain, a node is
// cordoned (and drained, under its pods' PodDisruptionBudgets) before its
// Job starts, and uncordoned after it only when the Shim set the cordon;
// a drain not done by its timeout fails the node (DrainBlocked) unchanged.
//
// Jobs are named from the shim, the node and the spec hash, length-safe
// with a hash suffix, and owned by the Shim, so an operator that restarts
// finds its Jobs again: it never duplicates one nor exceeds maxUpdate.
// Label values built from names (the Jobs' and RuntimeClasses' shim and
// node labels) are the names themselves up to 63 characters, else a
// readable prefix and a hash of the whole name: Shims of 253 characters on
// nodes of 253 roll out.
//
// # Handlers and RuntimeClasses
//
// A Shim registers its primary handler (spec.runtimeClass with the
// top-level runtime fields) and every one of spec.handlers, each with its
// own RuntimeClass. A Shim has one node label: all its handlers are
// installed, upgraded and removed together, by one installer run per node,
// so every RuntimeClass of a Shim selects the same nodes. Ready requires
// all of them to be published; a handler dropped from the spec loses its
// RuntimeClass at once (no new pod asks for it), and on delete they all go
// last, after every node is clean.
//
// A RuntimeClass is the Shim's when its controller reference names the
// Shim's UID. The operator creates a RuntimeClass that is absent, updates
// one that is the Shim's (an Update carrying the resourceVersion it read),
// and deletes only its own (with its UID as a precondition). A
// RuntimeClass of one of the spec's names that belongs to someone else (an
// admin, another tool, another Shim) is never changed, adopted or deleted:
// the Shim is Degraded with reason RuntimeClassConflict naming it and the
// field, and a Warning Event; the nodes are installed all the same. When
// that RuntimeClass goes, the watch on RuntimeClasses lets the Shim publish
// its own.
//
// A handler that a node's containerd config already defines and shimkit
// did not write is refused there (the installer's Conflict) unless its
// runtimeClass.adoptHandler is true: plan.Handler.Adopt, and the original
// comes back byte for byte on uninstall. Adoption is part of the spec
// hash, so setting it after a Conflict starts a new round.
//
// # Migration from runtime-class-manager
//
// A Shim with spec.migrateFrom.runtimeClassManager replaces a Shim of
// spinframework's runtime-class-manager (runtime.spinkube.dev, or
// runtime.kwasm.sh of its KWasm era) of the same handler; shimkit-operator
// migrate writes such Shims (package operator/migrate). Each reconcile
// first takes over, in place, the spec's RuntimeClasses that the old Shim
// controls (its group, kind Shim, its name, and its UID when it can be
// read) and that have the Shim's handler (runtimeclass.Takeover): the owner
// reference to the old Shim is replaced by this Shim's, so that deleting
// the old Shim no longer deletes the RuntimeClass its pods use. From then
// on the RuntimeClass is the Shim's, and schedules new pods onto the nodes
// shimkit installed; running pods are not touched. A RuntimeClass the old
// Shim controls with another handler, or an earlier Shim of its name
// does, stays a RuntimeClassConflict that says so.
//
// A node that carries the old Shim's node label (the bare key <its name>,
// with a value runtime-class-manager writes: RCMLabelValues) and no label
// of this Shim's gets an install plan with plan.Migration: the installer
// replaces runtime-class-manager's handler table, binary and lock file
// entry by the Shim's with one containerd restart, and refuses (Conflict)
// a handler of that name runtime-class-manager did not recognisably write.
// Once a node has the Shim, the old label is removed from it (a merge
// patch of that key alone): runtime-class-manager would no longer count
// the node as its own, nor uninstall it. A node the old Shim provisioned
// that this Shim does not select is left as it is.
//
// # One installer per node, and batches across Shims
//
// A node runs at most one installer Job at a time, across all Shims: the
// operator keeps one slot per node (learnt again from the running Jobs
// after a restart), and Options.MaxRestartingNodes caps how many nodes hold
// one at once. Shims with installs pending on the same node share one Job:
// a Shim with nodes to install offers them and waits up to
// Options.BatchWindow while another Shim is unsettled, or selects one of
// those nodes and has never been on it (a node that joined); the Shim that starts
// the Job claims the other offers of that node that are compatible (same
// pull secret and trusted root, no handler in common), and the Job carries
// a plan.NodePlanList, has every member as an owner, and lists them in the
// annotation MembersAnnotation. Each member reads its own item of the
// result; a member whose item is plan.ReasonSiblingFailed was rolled back
// for another Shim's failure, records no failure of its own and is
// installed on that node again, alone.
//
// The reconciler reads every Node and the operator's Jobs as the cache's
// own objects, without copies: the controller's event handlers record
// each one before the watch predicates decide whether to enqueue, so a
// reconcile always sees the event that started it.
//
// # Drift and verification
//
// A node labelled as having a Shim at the target is drifted when its
// kubelet no longer reports one of the Shim's handlers
// (node.status.runtimeHandlers), or when its last verification found it
// unlike its install record. Every Options.VerifyPeriod, once a Shim's
// rollout is done, each such node is verified by a Job of plan.OpVerify
// (at most maxUpdate at a time, holding the node in the gate, never
// counted as changing); the finding is recorded on the node
// (nodelabel.Verification). A drifted node is counted in
// status.driftedNodes and installed again under maxUpdate (Warning Event
// Drifted, Normal Repairing), which lays out the bundle again and records
// a clean verification (nodelabel.Mark).
//
// # The node plan and the node's result
//
// BuildPlan turns a Shim into the plan.NodePlan of one node, applying
// every default of the Shim API in one place (handlers, files, runtime
// paths, sandboxers, the artifact of the node's platform). The Job carries
// the plan as JSON in its pod template's annotation PlanAnnotation,
// mounted through the downward API as the file its args name
// (shimkit-installer install --plan /etc/shimkit/plan/plan.json ...): no
// environment variable, no second object to create or clean up, and
// `kubectl get job -o yaml` shows what the node was told.
//
// # The installer pod
//
// The installer pod is privileged, on the host network, pinned to its
// node, and sees only the node directories it works in, under
// Options.HostRoot: /etc, /var, /run and /opt read-write (containerd's
// configs and sockets of every preset, the state, the bundles, the
// units), /usr, /bin and /sbin read-only (containerd's PATH, so that no
// link shadows a binary there), /proc read-only (the node's shim
// processes: a stopped one refuses a restart) and /usr/local/bin
// read-write (containerd 1.6's PATH links). Only /usr/local/bin may be created by the kubelet:
// nothing it creates can change what preset detection finds. It runs in
// its own PID namespace (restarts go over the system D-Bus socket;
// Options.HostPID for nodes without one), and its grace period covers a
// containerd restart in flight plus the whole rollback the installer runs
// on SIGTERM (nodejob.GracePeriodSeconds).
//
// The installer writes its plan.NodeResult as the container's termination
// message. For a finished Job the operator reads it from the Job's newest
// pod (one list per Job, from the API server, so no pod cache), and a failed
// node's reason and message (ConfigInvalid: /etc/containerd/config.toml:12:
// ..., or the node-side refusals Conflict, Reserved, ConcurrentEdit) go
// into status.failingNodes, the Degraded condition and a Warning Event
// related to the node; without a readable result, the Job's failed
// condition stands in.
// The installer's final exit codes (plan.FinalExitCodes: 2 a bad plan, 3
// rolled back, 4 rollback failed, 5 a refusal that retrying cannot change,
// plan.Reason.Permanent: Conflict, Reserved, DigestMismatch, ...) fail the
// Job at once (its podFailurePolicy); 1 (a download, a restart) is retried
// up to Options.JobBackoffLimit.
package operator
