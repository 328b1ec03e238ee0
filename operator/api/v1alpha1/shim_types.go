package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// Shim describes a containerd shim to install on a set of nodes.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster,shortName=shm
// +kubebuilder:printcolumn:name="RuntimeClass",type=string,JSONPath=`.spec.runtimeClass.name`
// +kubebuilder:printcolumn:name="Handler",type=string,JSONPath=`.spec.runtimeClass.handler`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Nodes",type=integer,JSONPath=`.status.nodes`
// +kubebuilder:printcolumn:name="Up-to-date",type=integer,JSONPath=`.status.updatedNodes`
// +kubebuilder:printcolumn:name="Skipped",type=integer,JSONPath=`.status.skippedNodes`,priority=1
// +kubebuilder:printcolumn:name="Stalled",type=string,JSONPath=`.status.conditions[?(@.type=="Stalled")].reason`,priority=1
// +kubebuilder:printcolumn:name="Artifact",type=string,JSONPath=`.status.artifact.digest`,priority=1
// +kubebuilder:printcolumn:name="Verified",type=string,JSONPath=`.status.artifact.verifiedBy`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type Shim struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   ShimSpec   `json:"spec"`
	Status ShimStatus `json:"status,omitempty"`
}

// ShimList is a list of Shims.
//
// +kubebuilder:object:root=true
type ShimList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Shim `json:"items"`
}

// ShimSpec is the desired state of a Shim.
//
// +kubebuilder:validation:XValidation:rule="!has(self.runtimeType) || !(self.runtimeType in ['io.containerd.runc.v1', 'io.containerd.runc.v2', 'io.containerd.runhcs.v1']) || (has(self.runtimeOptions) && !has(self.runtimePath))",message="runtimeType: io.containerd.runc.v1, io.containerd.runc.v2 and io.containerd.runhcs.v1 are containerd's own shims; a Shim may name one only to run its bundle's OCI runtime through containerd's shim: set runtimeOptions.BinaryName, and no runtimePath",fieldPath=".runtimeType",reason=FieldValueForbidden
// +kubebuilder:validation:XValidation:rule="!has(self.migrateFrom) || self.migrateFrom.runtimeClassManager.shim == (has(self.runtimeClass.handler) ? self.runtimeClass.handler : self.runtimeClass.name)",messageExpression="'runtime-class-manager registered the containerd handler under the name of its Shim, ' + self.migrateFrom.runtimeClassManager.shim + ', and pods of its RuntimeClass ask for that handler: set runtimeClass.handler to ' + self.migrateFrom.runtimeClassManager.shim",fieldPath=".migrateFrom.runtimeClassManager.shim",reason=FieldValueInvalid
// +kubebuilder:validation:XValidation:rule="!has(self.handlers) || self.handlers.all(h, (has(h.runtimeClass.handler) ? h.runtimeClass.handler : h.runtimeClass.name) != (has(self.runtimeClass.handler) ? self.runtimeClass.handler : self.runtimeClass.name) && h.runtimeClass.name != self.runtimeClass.name)",message="handlers: a runtimeClass.handler or runtimeClass.name repeats spec.runtimeClass"
// +kubebuilder:validation:XValidation:rule="has(self.schedulingLabel) == has(oldSelf.schedulingLabel) && (!has(self.schedulingLabel) || self.schedulingLabel == oldSelf.schedulingLabel)",message="schedulingLabel cannot change: the running pods of its RuntimeClasses were admitted with it",fieldPath=".schedulingLabel",reason=FieldValueForbidden
// +kubebuilder:validation:XValidation:rule="!has(self.verification) || self.fetchStrategy.type != 'anonHttp' || !has(self.fetchStrategy.anonHttp) || ((!has(self.fetchStrategy.anonHttp.location) || has(self.fetchStrategy.anonHttp.signature)) && (!has(self.fetchStrategy.anonHttp.platforms) || self.fetchStrategy.anonHttp.platforms.all(p, has(p.signature))))",message="verification of an anonHttp artifact needs its signature URL: set fetchStrategy.anonHttp.signature (and platforms[].signature for each platform)",fieldPath=".verification",reason=FieldValueRequired
type ShimSpec struct {
	// nodeSelector selects the nodes that get the shim. When empty, every
	// node except those labelled node-role.kubernetes.io/control-plane;
	// control-plane nodes are targeted only when the selector names that
	// label explicitly.
	// +optional
	NodeSelector map[string]string `json:"nodeSelector,omitempty"`

	// fetchStrategy says where the shim comes from.
	FetchStrategy FetchStrategy `json:"fetchStrategy"`

	// verification, when set, says who must have signed the artifact:
	// nothing unverified is installed. The operator verifies the pinned
	// digest's signature when it resolves the artifact, and every node's
	// installer verifies it again before it downloads or writes anything.
	// Off by default.
	// +optional
	Verification *Verification `json:"verification,omitempty"`

	// schedulingLabel is a label key of your own domain (example.com/kata)
	// that the Shim's RuntimeClasses select instead of the Shim's own
	// label, shim.containerd.x-k8s.io/<shim>: the operator sets it, with
	// the same value ("installed"), whenever it sets its own, and removes
	// both together. For node pools whose autoscaler refuses labels of the
	// k8s.io domain (Karpenter's NodePool): the pool declares
	// <schedulingLabel>: installed, so that a pending pod of the
	// RuntimeClass makes it add a node. A declared label is never taken as
	// an install: the node keeps the startup taint until the operator has
	// installed and verified it. Each Shim's own (a Shim whose label an
	// older Shim has is refused, InvalidSpec); set at creation, it cannot
	// change. Not part of the spec hash.
	// +optional
	// +kubebuilder:validation:MaxLength=317
	// +kubebuilder:validation:XValidation:rule="self.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*/[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$') && self.split('/')[0].size() <= 253 && self.split('/')[1].size() <= 63",message="schedulingLabel: a label key with a DNS subdomain prefix (example.com/kata); the name after the / at most 63 characters"
	// +kubebuilder:validation:XValidation:rule="!self.startsWith('shim.containerd.x-k8s.io/')",message="schedulingLabel: the shim.containerd.x-k8s.io/ prefix is shimkit's own; use a domain of yours"
	SchedulingLabel string `json:"schedulingLabel,omitempty"`

	// runtimeClass is the RuntimeClass published for the shim's primary
	// handler. Its handler cannot change once set.
	// +kubebuilder:validation:XValidation:rule="(has(self.handler) ? self.handler : self.name) == (has(oldSelf.handler) ? oldSelf.handler : oldSelf.name)",message="runtimeClass.handler is immutable (when it is not set it is runtimeClass.name, which then cannot change either)"
	RuntimeClass RuntimeClassSpec `json:"runtimeClass"`

	// runtimeType is the containerd runtime_type, which names the shim
	// binary (io.containerd.spin.v2 → containerd-shim-spin-v2); default
	// io.containerd.<runtimeClass.handler>.v2. The types of containerd's
	// own shims (io.containerd.runc.v1, io.containerd.runc.v2,
	// io.containerd.runhcs.v1) are reserved: a Shim names one only to run
	// its bundle's OCI runtime with containerd's shim, through
	// runtimeOptions.BinaryName and without a runtimePath.
	// +optional
	// +kubebuilder:validation:Pattern=`^io\.containerd\.[a-z0-9][a-z0-9_-]*\.v[0-9]+$`
	RuntimeType string `json:"runtimeType,omitempty"`

	// runtimeOptions is the handler's options table in containerd's
	// config, as a JSON object (for example {"SystemdCgroup": true}).
	// BinaryName names the OCI runtime containerd's runc shim runs
	// (for example $(BUNDLE_DIR)/crun).
	// +optional
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Type=object
	RuntimeOptions *runtime.RawExtension `json:"runtimeOptions,omitempty"`

	// runtimePath is the absolute path of the shim binary on the node, or
	// one under $(BUNDLE_DIR); default: the bundle's binary of the name
	// containerd looks for (containerd-shim-<name>-<version> of
	// runtimeType), when the bundle has one.
	// +optional
	// +kubebuilder:validation:Pattern=`^(/|\$\(BUNDLE_DIR\)/)[^\s]*$`
	RuntimePath string `json:"runtimePath,omitempty"`

	// podAnnotations are the pod annotation keys (or prefixes ending in *)
	// passed to the shim.
	// +optional
	// +kubebuilder:validation:MaxItems=32
	// +kubebuilder:validation:items:Pattern=`^[^\s]+$`
	PodAnnotations []string `json:"podAnnotations,omitempty"`

	// privilegedWithoutHostDevices keeps host devices out of privileged
	// containers of this runtime.
	// +optional
	PrivilegedWithoutHostDevices bool `json:"privilegedWithoutHostDevices,omitempty"`

	// containerAnnotations are the container annotation keys (or prefixes
	// ending in *) passed to the shim.
	// +optional
	// +kubebuilder:validation:MaxItems=32
	// +kubebuilder:validation:items:Pattern=`^[^\s]+$`
	ContainerAnnotations []string `json:"containerAnnotations,omitempty"`

	// snapshotter is the snapshotter for this handler's containers.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	Snapshotter string `json:"snapshotter,omitempty"`

	// sandboxer is the sandbox controller of this handler's pods: the name
	// of one of spec.sandboxers, or containerd's own (podsandbox, shim).
	// +optional
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	Sandboxer string `json:"sandboxer,omitempty"`

	// ioType is the handler's io_type: fifo or streaming.
	// +optional
	// +kubebuilder:validation:Enum=fifo;streaming
	IOType string `json:"ioType,omitempty"`

	// files are the bundle's files, taken from the artifact into the
	// Shim's bundle directory on the node. Default: the artifact's shim
	// binary (the containerd-shim-* file), placed under the name
	// containerd looks for. Handler options, runtime paths, sandboxer
	// commands and files with substitute: true refer to the bundle
	// directory as $(BUNDLE_DIR).
	// +optional
	// +kubebuilder:validation:MaxItems=32
	// +listType=map
	// +listMapKey=path
	// +kubebuilder:validation:XValidation:rule="self.all(f, self.exists_one(g, (has(g.target) ? g.target : (g.path.matches('[*?]') ? g.path.substring(g.path.lastIndexOf('/') + 1) : g.path)) == (has(f.target) ? f.target : (f.path.matches('[*?]') ? f.path.substring(f.path.lastIndexOf('/') + 1) : f.path))))",message="files: each target (default: path, or its base name for a pattern) at most once"
	// +kubebuilder:validation:XValidation:rule="self.all(f, !(has(f.target) ? f.target : f.path).endsWith('/') || !self.exists(g, g != f && ((has(g.target) ? g.target : g.path) + '/').startsWith(has(f.target) ? f.target : f.path)))",message="files: nothing else goes into a directory's target"
	Files []BundleFile `json:"files,omitempty"`

	// handlers are further runtime handlers served by the same bundle
	// (for example kata-qemu and kata-clh), each with its own
	// RuntimeClass. The handler of spec.runtimeClass is always the first.
	// +optional
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:XValidation:rule="self.all(h, self.exists_one(g, (has(g.runtimeClass.handler) ? g.runtimeClass.handler : g.runtimeClass.name) == (has(h.runtimeClass.handler) ? h.runtimeClass.handler : h.runtimeClass.name)))",message="handlers: each runtimeClass.handler at most once"
	// +kubebuilder:validation:XValidation:rule="self.all(h, self.exists_one(g, g.runtimeClass.name == h.runtimeClass.name))",message="handlers: each runtimeClass.name at most once"
	Handlers []HandlerSpec `json:"handlers,omitempty"`

	// sandboxers are long-running sandboxer daemons (as Kuasar's): each
	// runs as a systemd unit on the node and is registered in containerd
	// as a proxy plugin of type sandbox, which handlers name in sandboxer.
	// +optional
	// +kubebuilder:validation:MaxItems=8
	// +listType=map
	// +listMapKey=name
	Sandboxers []SandboxerSpec `json:"sandboxers,omitempty"`

	// rolloutStrategy says how a change reaches the nodes.
	// +optional
	// +kubebuilder:default={type: rolling, rolling: {maxUpdate: 1}}
	RolloutStrategy *RolloutStrategy `json:"rolloutStrategy,omitempty"`

	// migrateFrom says the Shim replaces one that another installer rolled
	// out: the nodes that installer provisioned are taken over, each with
	// one containerd restart and without uninstalling first, and so is its
	// RuntimeClass, which the pods of that handler keep using. It is part
	// of the spec hash: setting it after nodes refused the install
	// (Conflict) starts a new round.
	// +optional
	MigrateFrom *MigrateFrom `json:"migrateFrom,omitempty"`

	// preinstalledOn selects the nodes whose image already has the shim
	// and registers its handlers (a label the image or the node pool
	// sets): no installer runs there; such a node is labelled once its
	// kubelet reports every handler of the Shim, and unlabelled when it
	// stops. The other matching nodes get the shim installed: one Shim
	// serves a mixed fleet. With fetchStrategy.type preinstalled every
	// matching node is such a node. Not part of the spec hash.
	// +optional
	PreinstalledOn map[string]string `json:"preinstalledOn,omitempty"`

	// containerRuntimes are the container runtimes the Shim's handlers run
	// on: containerd, cri-o. A matching node whose kubelet reports another
	// runtime (status.nodeInfo.containerRuntimeVersion) is skipped
	// (RuntimeNotSupported), never failed; one Shim rolls out over a fleet
	// that mixes them, under one maxUpdate, windows, steps and gate, each
	// node with its runtime's config. Default: containerd and cri-o when
	// every handler is an OCI runtime run through containerd's runc shim
	// (runtimeOptions.BinaryName: an oci handler on CRI-O) and the Shim sets
	// nothing CRI-O lacks (below), else containerd alone (a containerd shim v2 runs on CRI-O as a vm handler only where
	// its maker says so: list cri-o then). On CRI-O a Shim has no
	// sandboxers, migrateFrom, adoptHandler, snapshotter, sandboxer,
	// ioType, pod or container annotations (allowed annotations go in
	// runtimeOptions' settings), and runtimeOptions other than BinaryName,
	// Root, ConfigPath and SystemdCgroup: a Shim that lists cri-o and sets
	// one is refused (InvalidSpec). Not part of the spec hash.
	// +optional
	// +kubebuilder:validation:MaxItems=2
	// +listType=set
	// +kubebuilder:validation:items:Enum=containerd;cri-o
	ContainerRuntimes []string `json:"containerRuntimes,omitempty"`

	// deletePolicy is what the Shim's deletion does about pods that still
	// run with its RuntimeClasses on a node, whose handler, binary and
	// bundle stay while they run: Wait (the default) uninstalls the node
	// once they are gone, as a PersistentVolumeClaim in use waits for its
	// last pod; Evict evicts them through the Eviction API, which honours
	// their PodDisruptionBudgets (a blocked eviction is retried, and said
	// in an EvictionBlocked Event), on at most maxUpdate nodes at a time,
	// then uninstalls the node. No pod is ever deleted by force. Not part
	// of the spec hash.
	// +optional
	DeletePolicy DeletePolicy `json:"deletePolicy,omitempty"`

	// canary is the pod each node's installer runs with the primary
	// handler once containerd has the change, before the node is
	// labelled: a node whose canary does not exit 0 in time is rolled
	// back, and the rollout halts (CanaryFailed). On by default, with the
	// installer's own image (which needs no registry access beyond the
	// installer's). Not part of the spec hash: changing it reinstalls no
	// node.
	// +optional
	Canary *Canary `json:"canary,omitempty"`
}

// DeletePolicy is what a deleted Shim does about the pods that still run
// with it.
// +kubebuilder:validation:Enum=Wait;Evict
type DeletePolicy string

// Delete policies.
const (
	DeleteWait  DeletePolicy = "Wait"
	DeleteEvict DeletePolicy = "Evict"
)

// MigrateFrom names what a Shim takes over.
type MigrateFrom struct {
	// runtimeClassManager is a Shim of spinframework's
	// runtime-class-manager (or of its KWasm era) of this Shim's handler:
	// runtime-class-manager registered the containerd handler under its
	// Shim's name. The operator takes over the RuntimeClasses of this spec
	// that Shim controls (its apiGroup, kind Shim, its name, and its UID
	// when the operator can read it) and whose handler is this Shim's,
	// before anything else: their owner reference to that Shim becomes
	// this Shim's, so deleting that Shim no longer deletes them. It
	// installs with migration the nodes that carry runtime-class-manager's
	// node label for it (the bare key <shim>, with one of its values
	// provisioned, pending, failed, uninstall) and that shimkit has not
	// installed: runtime-class-manager's handler table, binary and lock
	// file entry are replaced by this Shim's, and a handler of that name
	// runtime-class-manager did not recognisably write is refused
	// (Conflict). Once a node has this Shim, that label is removed from
	// it. Stop runtime-class-manager's operator first.
	RuntimeClassManager RuntimeClassManagerShim `json:"runtimeClassManager"`
}

// RuntimeClassManagerShim is a Shim of runtime-class-manager that a shimkit
// Shim replaces (see MigrateFrom.RuntimeClassManager). Its name must be
// the shimkit Shim's handler.
type RuntimeClassManagerShim struct {
	// shim is the runtime-class-manager Shim's name (its containerd
	// handler).
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	Shim string `json:"shim"`
	// apiGroup is the Shim's API group: runtime.spinkube.dev
	// (runtime-class-manager since March 2025, the default) or
	// runtime.kwasm.sh (before).
	// +optional
	// +kubebuilder:default=runtime.spinkube.dev
	// +kubebuilder:validation:Enum=runtime.spinkube.dev;runtime.kwasm.sh
	APIGroup string `json:"apiGroup,omitempty"`
}

// API groups of runtime-class-manager's Shim, version v1alpha1, kind Shim.
const (
	// RCMGroup is runtime-class-manager's group since March 2025.
	RCMGroup = "runtime.spinkube.dev"
	// RCMGroupKWasm is its group before, under the KWasm name.
	RCMGroupKWasm = "runtime.kwasm.sh"
)

// Group is the Shim's API group: apiGroup, or RCMGroup when not set.
func (r RuntimeClassManagerShim) Group() string {
	if r.APIGroup != "" {
		return r.APIGroup
	}
	return RCMGroup
}

// BundleFile is one file of a Shim's bundle, a directory of the artifact,
// or a file the Shim itself writes (content).
//
// +kubebuilder:validation:XValidation:rule="has(self.target) || has(self.content) || !self.path.substring(self.path.lastIndexOf('/') + 1).matches('[*?]')",message="files.target: required when the base name of path is a pattern"
// +kubebuilder:validation:XValidation:rule="!self.path.endsWith('/') || !self.path.matches('[*?]')",message="files.path: a directory (ending in /) is not a pattern"
// +kubebuilder:validation:XValidation:rule="!has(self.target) || self.path.endsWith('/') == self.target.endsWith('/')",message="files.target: a directory (ending in /) when path is one, else a file"
// +kubebuilder:validation:XValidation:rule="!has(self.content) || (!has(self.target) && !self.path.endsWith('/') && !self.path.matches('[*?]'))",message="files.content: path is then the file's place in the bundle: not a pattern, not a directory, and no target"
type BundleFile struct {
	// path is the file's path in the artifact, or a pattern (as Go's
	// path.Match, with * and ?) matching exactly one file; a pattern
	// without a slash matches base names anywhere in the artifact. A path
	// ending in / is a directory of the artifact: every file under it, at
	// any depth, is laid out (gVisor's gvisor-bin/). With content, path is
	// where the file goes in the bundle.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=255
	// +kubebuilder:validation:Pattern=`^[^/\s\[\]\\][^\s\[\]\\]*$`
	// +kubebuilder:validation:XValidation:rule="!(self.endsWith('/') ? self.substring(0, size(self) - 1) : self).split('/').exists(e, e == '..' || e == '.' || e == '')",message="files.path: a clean relative path in the artifact"
	Path string `json:"path"`
	// target is where the file goes, relative to the bundle directory;
	// default: path (the base name when path is a pattern). A directory
	// (path ending in /) goes to a directory: target ends in / too.
	// +optional
	// +kubebuilder:validation:MaxLength=255
	// +kubebuilder:validation:Pattern=`^[^/\s][^\s]*$`
	// +kubebuilder:validation:XValidation:rule="!(self.endsWith('/') ? self.substring(0, size(self) - 1) : self).split('/').exists(e, e == '..' || e == '.' || e == '')",message="files.target: a clean relative path inside the bundle"
	Target string `json:"target,omitempty"`
	// mode is the file's permission bits (0755 for programs); default
	// 0644, or 0755 when target is the shim binary of one of the Shim's
	// handlers (containerd-shim-<name>-<version>). For a directory, the
	// mode of every file under it (archive modes are not trusted).
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=511
	Mode *int32 `json:"mode,omitempty"`
	// substitute replaces $(BUNDLE_DIR) in the file's content with the
	// bundle directory's node path (for configuration files that name
	// other files of the bundle, such as runsc.toml's binary_name).
	// +optional
	Substitute bool `json:"substitute,omitempty"`
	// content is the file's content, written at path in the bundle
	// instead of a file taken from the artifact: a configuration file the
	// release does not ship (gVisor's runsc.toml). Up to 32 KiB.
	// +optional
	// +kubebuilder:validation:MaxLength=32768
	Content *string `json:"content,omitempty"`
}

// HandlerSpec is a further runtime handler of a Shim.
//
// +kubebuilder:validation:XValidation:rule="!has(self.runtimeType) || !(self.runtimeType in ['io.containerd.runc.v1', 'io.containerd.runc.v2', 'io.containerd.runhcs.v1']) || (has(self.runtimeOptions) && !has(self.runtimePath))",message="runtimeType: io.containerd.runc.v1, io.containerd.runc.v2 and io.containerd.runhcs.v1 are containerd's own shims; a Shim may name one only to run its bundle's OCI runtime through containerd's shim: set runtimeOptions.BinaryName, and no runtimePath",fieldPath=".runtimeType",reason=FieldValueForbidden
type HandlerSpec struct {
	// runtimeClass is the RuntimeClass published for this handler.
	RuntimeClass RuntimeClassSpec `json:"runtimeClass"`
	// runtimeType is the containerd runtime_type; default
	// io.containerd.<runtimeClass.handler>.v2.
	// +optional
	// +kubebuilder:validation:Pattern=`^io\.containerd\.[a-z0-9][a-z0-9_-]*\.v[0-9]+$`
	RuntimeType string `json:"runtimeType,omitempty"`
	// runtimeOptions is the handler's options table, as a JSON object.
	// +optional
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Type=object
	RuntimeOptions *runtime.RawExtension `json:"runtimeOptions,omitempty"`
	// runtimePath is the absolute path of the shim binary on the node,
	// often under $(BUNDLE_DIR); default: the bundle's binary of the name
	// containerd looks for, when the bundle has one.
	// +optional
	// +kubebuilder:validation:Pattern=`^(/|\$\(BUNDLE_DIR\)/)[^\s]*$`
	RuntimePath string `json:"runtimePath,omitempty"`
	// +optional
	// +kubebuilder:validation:MaxItems=32
	// +kubebuilder:validation:items:Pattern=`^[^\s]+$`
	PodAnnotations []string `json:"podAnnotations,omitempty"`
	// +optional
	// +kubebuilder:validation:MaxItems=32
	// +kubebuilder:validation:items:Pattern=`^[^\s]+$`
	ContainerAnnotations []string `json:"containerAnnotations,omitempty"`
	// +optional
	PrivilegedWithoutHostDevices bool `json:"privilegedWithoutHostDevices,omitempty"`
	// +optional
	// +kubebuilder:validation:MaxLength=63
	Snapshotter string `json:"snapshotter,omitempty"`
	// +optional
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	Sandboxer string `json:"sandboxer,omitempty"`
	// +optional
	// +kubebuilder:validation:Enum=fifo;streaming
	IOType string `json:"ioType,omitempty"`
}

// SandboxerSpec is a sandboxer daemon of a Shim.
type SandboxerSpec struct {
	// name is the proxy plugin's name in containerd, which handlers give
	// as their sandboxer.
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	Name string `json:"name"`
	// command is the daemon's argv; the program is an absolute path,
	// usually $(BUNDLE_DIR)/<file>. $(ADDRESS) stands for address.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:XValidation:rule="self[0].startsWith('/') || self[0].startsWith('$(BUNDLE_DIR)/')",message="sandboxers.command: the program must be an absolute path or under $(BUNDLE_DIR)"
	Command []string `json:"command"`
	// address is the daemon's unix socket; default
	// /run/shimkit/<name>.sock.
	// +optional
	// +kubebuilder:validation:MaxLength=107
	// +kubebuilder:validation:Pattern=`^/[^\s]*$`
	Address string `json:"address,omitempty"`
	// env holds NAME=value pairs for the daemon.
	// +optional
	// +kubebuilder:validation:MaxItems=32
	// +kubebuilder:validation:items:Pattern=`^[A-Za-z_][A-Za-z0-9_]*=`
	Env []string `json:"env,omitempty"`
}

// FetchStrategyType names a way to fetch the shim.
// +kubebuilder:validation:Enum=anonHttp;oci;image;preinstalled
type FetchStrategyType string

// Fetch strategies.
const (
	FetchAnonHTTP FetchStrategyType = "anonHttp"
	FetchOCI      FetchStrategyType = "oci"
	// FetchImage: the shim is a container image whose files hold the
	// bundle. The operator pins its digest once (and verifies its
	// signature, with spec.verification); every node's kubelet pulls
	// image@digest itself, through the node's registry mirrors
	// (containerd's hosts.toml), its credential providers and its image
	// cache, and mounts it into the installer's pod as an image volume
	// (Kubernetes 1.35+ with containerd 2.1+), or, on a node that cannot,
	// copies its files there with init containers. Nothing is downloaded
	// inside the pod.
	FetchImage FetchStrategyType = "image"
	// FetchPreinstalled: the node image provides the shim and registers
	// its handlers (examples/image-builder, a Talos system extension, a
	// Bottlerocket variant): nothing is fetched and no installer runs. A
	// node is labelled once its kubelet reports every handler of the
	// Shim (status.runtimeHandlers), and unlabelled when it stops.
	FetchPreinstalled FetchStrategyType = "preinstalled"
)

// FetchStrategy is a type plus exactly the matching one of anonHttp, oci
// and image (none for preinstalled).
//
// +kubebuilder:validation:XValidation:rule="(has(self.anonHttp) ? 1 : 0) + (has(self.oci) ? 1 : 0) + (has(self.image) ? 1 : 0) == (self.type == 'preinstalled' ? 0 : 1) && (self.type != 'anonHttp' || has(self.anonHttp)) && (self.type != 'oci' || has(self.oci)) && (self.type != 'image' || has(self.image))",message="fetchStrategy: set exactly the one of anonHttp, oci and image that type names (none for preinstalled)"
type FetchStrategy struct {
	Type FetchStrategyType `json:"type"`
	// +optional
	AnonHTTP *AnonHTTPFetch `json:"anonHttp,omitempty"`
	// +optional
	OCI *OCIFetch `json:"oci,omitempty"`
	// image names a container image whose files hold the bundle (see
	// FetchImage). reference may be a tag, which the operator resolves
	// once per spec, or image@sha256:..., which it never needs to reach
	// the registry for (a registry only the nodes' mirror serves) unless
	// spec.verification asks for the signature. pullSecretRef becomes the
	// installer Jobs' imagePullSecrets and the operator's credentials;
	// without it the nodes' own (credential providers, the kubelet's
	// config) are used. plainHTTP and insecure apply to the operator's
	// resolve only: the nodes pull as their containerd is configured.
	// +optional
	Image *OCIFetch `json:"image,omitempty"`
	// resolveInterval, when set, makes the operator resolve the artifact
	// again that often (an OCI tag to its digest, an HTTP artifact
	// without sha256 to the digest of what the URL serves). A new digest
	// rolls out as an upgrade under maxUpdate. Without it the artifact is
	// resolved once per spec change, and again only when the Shim's
	// annotation shim.containerd.x-k8s.io/resolve changes. At least 1m.
	// +optional
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('1m')",message="fetchStrategy.resolveInterval: at least 1m"
	ResolveInterval *metav1.Duration `json:"resolveInterval,omitempty"`
}

// AnonHTTPFetch downloads the shim anonymously over HTTP(S).
//
// +kubebuilder:validation:XValidation:rule="has(self.location) || (has(self.platforms) && size(self.platforms) > 0)",message="fetchStrategy.anonHttp: set location, or platforms"
// +kubebuilder:validation:XValidation:rule="!has(self.platforms) || self.platforms.all(p, self.platforms.exists_one(q, q.platform == p.platform))",message="fetchStrategy.anonHttp.platforms: each platform at most once"
type AnonHTTPFetch struct {
	// location is the URL of the artifact: a tarball (.tar, .tar.gz,
	// .tar.zst or .tar.bz2, recognised by content) or a bare binary.
	// +optional
	// +kubebuilder:validation:Pattern=`^https?://[^\s]+$`
	// +kubebuilder:validation:MaxLength=2048
	Location string `json:"location,omitempty"`
	// sha256 is the hex digest of the artifact; recommended: a download
	// that does not match is rejected before anything is installed.
	// Without it the operator downloads the artifact once, computes its
	// digest and pins every node to it.
	// +optional
	// +kubebuilder:validation:Pattern=`^[a-f0-9]{64}$`
	SHA256 string `json:"sha256,omitempty"`
	// signature is the URL of location's signature: a sigstore bundle
	// (cosign sign-blob --bundle) or a detached signature (cosign
	// sign-blob --output-signature, base64). Required with
	// spec.verification.
	// +optional
	// +kubebuilder:validation:Pattern=`^https?://[^\s]+$`
	// +kubebuilder:validation:MaxLength=2048
	Signature string `json:"signature,omitempty"`
	// platforms gives per-platform artifacts, used instead of location on
	// nodes of that platform.
	// +optional
	// +kubebuilder:validation:MaxItems=2
	Platforms []PlatformArtifact `json:"platforms,omitempty"`
}

// PlatformArtifact is the artifact for one platform.
type PlatformArtifact struct {
	// +kubebuilder:validation:Enum=linux/amd64;linux/arm64
	Platform string `json:"platform"`
	// +kubebuilder:validation:Pattern=`^https?://[^\s]+$`
	// +kubebuilder:validation:MaxLength=2048
	Location string `json:"location"`
	// +optional
	// +kubebuilder:validation:Pattern=`^[a-f0-9]{64}$`
	SHA256 string `json:"sha256,omitempty"`
	// signature is the URL of this artifact's signature (see
	// anonHttp.signature).
	// +optional
	// +kubebuilder:validation:Pattern=`^https?://[^\s]+$`
	// +kubebuilder:validation:MaxLength=2048
	Signature string `json:"signature,omitempty"`
}

// Registry returns the settings of the strategy's registry artifact: oci
// or image (nil for the others).
func (f FetchStrategy) Registry() *OCIFetch {
	switch f.Type {
	case FetchOCI:
		return f.OCI
	case FetchImage:
		return f.Image
	}
	return nil
}

// OCIFetch pulls the shim from an OCI registry.
type OCIFetch struct {
	// reference is registry/repository:tag or registry/repository@sha256:...
	// A digest pins the artifact. An image index is resolved to the node's
	// platform.
	// +kubebuilder:validation:Pattern=`^[a-z0-9][^\s@:]*(:[0-9]+)?/[^\s@:]+(:[\w][\w.-]{0,127}|@sha256:[a-f0-9]{64})$`
	// +kubebuilder:validation:MaxLength=1024
	Reference string `json:"reference"`
	// pullSecretRef names a kubernetes.io/dockerconfigjson Secret with the
	// registry's credentials.
	// +optional
	PullSecretRef *SecretReference `json:"pullSecretRef,omitempty"`
	// plainHTTP talks plain HTTP to the registry. It is allowed only for
	// loopback and cluster-local registries (localhost, 127.0.0.0/8, ::1,
	// names ending in .svc or .svc.cluster.local) unless insecure is set.
	// +optional
	PlainHTTP bool `json:"plainHTTP,omitempty"`
	// insecure allows plainHTTP to any registry. Anyone on the path can
	// then change what the nodes install (unless spec.verification is
	// set); the operator records a Warning Event on every resolve.
	// +optional
	Insecure bool `json:"insecure,omitempty"`
}

// Verification says who must have signed the artifact: one of the public
// keys, or (keyless) a certificate of the given identity issued by the
// trusted root's certificate authority. At least one of publicKeys and
// keyless must be set; a signature that satisfies either is accepted.
//
// OCI artifacts: a sigstore bundle attached to the resolved digest as a
// referrer (cosign sign with the new bundle format, the default of cosign
// 3), or a cosign signature under the tag sha256-<hex>.sig. HTTP artifacts:
// the bundle or detached signature at anonHttp.signature.
//
// +kubebuilder:validation:XValidation:rule="(has(self.publicKeys) && size(self.publicKeys) > 0) || has(self.keyless)",message="verification: set publicKeys, keyless, or both"
type Verification struct {
	// publicKeys are PEM-encoded public keys (ECDSA, RSA or Ed25519), as
	// cosign.pub.
	// +optional
	// +kubebuilder:validation:MaxItems=8
	// +kubebuilder:validation:items:MaxLength=8192
	// +kubebuilder:validation:items:Pattern=`^\s*-----BEGIN PUBLIC KEY-----`
	PublicKeys []string `json:"publicKeys,omitempty"`
	// keyless accepts a signature with a short-lived certificate of the
	// given identity.
	// +optional
	Keyless *KeylessVerification `json:"keyless,omitempty"`
}

// KeylessVerification names the signer's certificate identity and the
// trust root it chains to.
//
// +kubebuilder:validation:XValidation:rule="has(self.subject) != has(self.subjectRegExp)",message="verification.keyless: set exactly one of subject and subjectRegExp"
type KeylessVerification struct {
	// issuer is the OIDC issuer of the signer's certificate, such as
	// https://token.actions.githubusercontent.com.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=1024
	Issuer string `json:"issuer"`
	// subject is the certificate's identity (an email or a URI, such as a
	// workflow).
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	Subject string `json:"subject,omitempty"`
	// subjectRegExp matches the identity instead (RE2, anchored by you).
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	SubjectRegExp string `json:"subjectRegExp,omitempty"`
	// trustedRootRef names a ConfigMap, in the operator's namespace, whose
	// key holds a sigstore trusted_root.json: the certificate authorities,
	// transparency logs and timestamp authorities to trust. Air-gapped
	// clusters supply their own; for the public-good instance use its
	// trusted_root.json.
	TrustedRootRef ConfigMapKeyReference `json:"trustedRootRef"`
}

// ConfigMapKeyReference names a key of a ConfigMap in the operator's
// namespace.
type ConfigMapKeyReference struct {
	// +kubebuilder:validation:MinLength=1
	Name string `json:"name"`
	// key defaults to trusted_root.json.
	// +optional
	Key string `json:"key,omitempty"`
}

// DefaultTrustedRootKey is the ConfigMap key a trustedRootRef reads by
// default.
const DefaultTrustedRootKey = "trusted_root.json"

// SecretReference names a Secret.
type SecretReference struct {
	// +kubebuilder:validation:MinLength=1
	Name string `json:"name"`
	// namespace must be the operator's namespace (the default), where
	// the installer Jobs run: a Job mounts the Secret from its own
	// namespace, so the operator needs no access to Secrets anywhere. A
	// Shim that names another namespace is refused (Degraded,
	// PullSecretNamespace) and installs nothing.
	// +optional
	Namespace string `json:"namespace,omitempty"`
}

// RuntimeClassSpec is the RuntimeClass published for the shim.
//
// +kubebuilder:validation:XValidation:rule="has(self.handler) || (size(self.name) <= 63 && self.name.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?$') && self.name != 'runc')",messageExpression="'runtimeClass.handler is not set, and runtimeClass.name ' + self.name + ' cannot stand for it (a handler is an RFC 1123 label of at most 63 characters, without dots, and not runc): set runtimeClass.handler'",reason=FieldValueRequired
type RuntimeClassSpec struct {
	// name of the RuntimeClass.
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	Name string `json:"name"`
	// handler is the containerd runtime handler name: an RFC 1123 DNS
	// label. Default: name, when name is a valid handler name (as the
	// Shim lifecycle proposal expects); otherwise it must be set. The
	// primary handler (spec.runtimeClass) cannot change once set. runc,
	// containerd's own handler, is reserved.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	// +kubebuilder:validation:XValidation:rule="self != 'runc'",message="runc is containerd's own handler: a Shim can neither register nor adopt it",reason=FieldValueForbidden
	Handler string `json:"handler,omitempty"`
	// adoptHandler lets the Shim take over a handler of this name that a
	// node's containerd config already defines and shimkit did not write
	// (an admin's, or another tool's). Without it such a node refuses the
	// install (reason Conflict) and changes nothing. An adopted handler's
	// original is kept on the node and put back byte for byte when the
	// Shim is uninstalled, instead of being deleted.
	// +optional
	AdoptHandler bool `json:"adoptHandler,omitempty"`
	// tolerations are added to pods of this RuntimeClass, so that they can
	// run on tainted nodes that have the shim.
	// +optional
	// +kubebuilder:validation:MaxItems=32
	Tolerations []Toleration `json:"tolerations,omitempty"`
}

// Toleration is a pod toleration (the fields of core/v1 Toleration).
type Toleration struct {
	// +optional
	Key string `json:"key,omitempty"`
	// +optional
	// +kubebuilder:validation:Enum=Exists;Equal
	Operator string `json:"operator,omitempty"`
	// +optional
	Value string `json:"value,omitempty"`
	// +optional
	// +kubebuilder:validation:Enum=NoSchedule;PreferNoSchedule;NoExecute
	Effect string `json:"effect,omitempty"`
	// +optional
	TolerationSeconds *int64 `json:"tolerationSeconds,omitempty"`
}

// RolloutType names a rollout strategy.
// +kubebuilder:validation:Enum=rolling;recreate
type RolloutType string

// Rollout strategies.
const (
	// RolloutRolling changes at most maxUpdate nodes at a time.
	RolloutRolling RolloutType = "rolling"
	// RolloutRecreate changes every node at once.
	RolloutRecreate RolloutType = "recreate"
)

// Canary is the pod that proves a node can run the Shim before it is
// labelled. The installer runs it through the node's CRI with the
// primary handler, as kubelet runs a pod of the RuntimeClass (the node is
// not labelled yet, so the RuntimeClass's scheduling would keep a real
// pod off it), on the node's network, and removes it afterwards.
type Canary struct {
	// enabled runs the canary; default true.
	// +optional
	Enabled *bool `json:"enabled,omitempty"`
	// image of the canary's container; default the installer's image,
	// run as "shimkit-installer canary" (it prints the kernel it sees and
	// exits 0). Pulled by containerd when the node lacks it.
	// +optional
	// +kubebuilder:validation:MinLength=1
	Image string `json:"image,omitempty"`
	// command replaces the image's entrypoint.
	// +optional
	// +kubebuilder:validation:MaxItems=32
	Command []string `json:"command,omitempty"`
	// args are the container's arguments; default ["canary"] with the
	// installer's image, none with another image.
	// +optional
	// +kubebuilder:validation:MaxItems=32
	Args []string `json:"args,omitempty"`
	// timeout bounds the canary, from the image pull to the container's
	// exit; default 60s, from 1s to 10m.
	// +optional
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('1s') && duration(self) <= duration('10m')",message="canary.timeout: from 1s to 10m"
	Timeout *metav1.Duration `json:"timeout,omitempty"`
}

// CanaryEnabled reports whether the Shim's nodes run the canary.
func (s *ShimSpec) CanaryEnabled() bool {
	return s.Canary == nil || s.Canary.Enabled == nil || *s.Canary.Enabled
}

// RolloutStrategy says how many nodes change at once, when, in which
// stages, and what a failure does. None of it is part of the spec hash:
// changing it reinstalls no node.
//
// +kubebuilder:validation:XValidation:rule="!has(self.rolling) || self.type == 'rolling'",message="rolloutStrategy.rolling is only for type rolling"
// +kubebuilder:validation:XValidation:rule="!has(self.steps) || self.type == 'rolling'",message="rolloutStrategy.steps is only for type rolling"
type RolloutStrategy struct {
	// +kubebuilder:default=rolling
	Type RolloutType `json:"type,omitempty"`
	// +optional
	Rolling *RollingUpdate `json:"rolling,omitempty"`
	// paused: no node starts installing, upgrading or uninstalling while
	// true; installer Jobs already running finish. The status says
	// Paused (Reconciling True): a paused Shim is not Stalled.
	// +optional
	Paused bool `json:"paused,omitempty"`
	// windows are the maintenance windows: a node that runs workloads
	// starts an install, upgrade or uninstall only inside one of them (a
	// node still carrying the startup taint shim.containerd.x-k8s.io/pending
	// runs nothing yet and is installed at once, and so is a node annotated
	// shim.containerd.x-k8s.io/force-rollout: "true"). Empty: always. The
	// status says when the next window opens (status.rollout.nextWindow).
	// +optional
	// +kubebuilder:validation:MaxItems=16
	Windows []MaintenanceWindow `json:"windows,omitempty"`
	// steps stage the rollout: each step names how many of the matching
	// nodes have the new spec at its end (a count, or a percentage rounded
	// up), then bakes for its bake time while the health gate watches the
	// nodes updated. maxUpdate still bounds each step. The nodes after the
	// last step follow under maxUpdate alone. The status shows the current
	// step and when its bake ends.
	// +optional
	// +kubebuilder:validation:MaxItems=10
	Steps []RolloutStep `json:"steps,omitempty"`
	// healthGate halts the rollout when workload pods of the Shim's
	// RuntimeClasses fail on updated nodes in ways that point at the
	// runtime (reason WorkloadFailures). On by default when steps are set;
	// set it to change the thresholds or to gate a rollout without steps.
	// +optional
	HealthGate *HealthGate `json:"healthGate,omitempty"`
	// disruption is what a node's workloads go through around the
	// change of a node (its installer Job, which may restart the
	// runtime): None (the default) changes the node under its running
	// pods, which containerd and CRI-O keep running through a restart;
	// Cordon marks the node unschedulable first; Drain also evicts its
	// pods first, as kubectl drain does. A node is uncordoned once its Job
	// ended, unless it was unschedulable before (shimkit never lifts a
	// cordon it did not set).
	// +optional
	Disruption *Disruption `json:"disruption,omitempty"`
	// onFailure is what a failed node or a tripped health gate does:
	// Halt (the default) stops the rollout where it is; Revert also
	// reinstalls the previous revision (status.revisions[0]: its spec and
	// pinned artifact) on the nodes already updated, under maxUpdate, and
	// leaves the Shim Degraded (Reverted) until the spec changes.
	// +optional
	OnFailure FailurePolicy `json:"onFailure,omitempty"`
}

// DisruptionPolicy is what a node's workloads go through around its
// change.
// +kubebuilder:validation:Enum=None;Cordon;Drain
type DisruptionPolicy string

// Disruption policies.
const (
	DisruptNone   DisruptionPolicy = "None"
	DisruptCordon DisruptionPolicy = "Cordon"
	DisruptDrain  DisruptionPolicy = "Drain"
)

// Disruption says how a node is cordoned and drained before it changes;
// the drain's fields are kubectl drain's.
type Disruption struct {
	// policy: None, Cordon or Drain.
	Policy DisruptionPolicy `json:"policy"`
	// podSelector limits the pods a drain evicts (default: all).
	// +optional
	PodSelector *metav1.LabelSelector `json:"podSelector,omitempty"`
	// timeout bounds a drain: a node whose pods are not gone by then is
	// not changed; it fails with reason DrainBlocked, quoting the
	// PodDisruptionBudget in the way, and is uncordoned. Default 5m.
	// +optional
	Timeout *metav1.Duration `json:"timeout,omitempty"`
	// gracePeriodSeconds is the evicted pods' termination grace period
	// (default: each pod's own).
	// +optional
	// +kubebuilder:validation:Minimum=0
	GracePeriodSeconds *int64 `json:"gracePeriodSeconds,omitempty"`
	// deleteEmptyDirData lets a drain evict pods with emptyDir volumes,
	// whose data goes with them; without it such a pod blocks the drain.
	// +optional
	DeleteEmptyDirData bool `json:"deleteEmptyDirData,omitempty"`
	// ignoreDaemonSets: a drain leaves DaemonSet pods alone (their
	// controller would start them again at once); false: such a pod
	// blocks the drain. Default true.
	// +optional
	// +kubebuilder:default=true
	IgnoreDaemonSets *bool `json:"ignoreDaemonSets,omitempty"`
}

// FailurePolicy is what a rollout does when it fails.
// +kubebuilder:validation:Enum=Halt;Revert
type FailurePolicy string

// Failure policies.
const (
	FailureHalt   FailurePolicy = "Halt"
	FailureRevert FailurePolicy = "Revert"
)

// MaintenanceWindow is a time of the week in which nodes may change.
//
// +kubebuilder:validation:XValidation:rule="self.start != self.end",message="windows: start and end must differ"
type MaintenanceWindow struct {
	// days the window opens on (Mon, Tue, Wed, Thu, Fri, Sat, Sun); empty:
	// every day. A window that ends before it starts closes the next day.
	// +optional
	// +kubebuilder:validation:MaxItems=7
	// +kubebuilder:validation:items:Enum=Mon;Tue;Wed;Thu;Fri;Sat;Sun
	Days []string `json:"days,omitempty"`
	// start is the local time the window opens ("HH:MM", 24-hour).
	// +kubebuilder:validation:Pattern=`^([01][0-9]|2[0-3]):[0-5][0-9]$`
	Start string `json:"start"`
	// end is the local time it closes ("HH:MM"; "00:00" is midnight).
	// +kubebuilder:validation:Pattern=`^([01][0-9]|2[0-3]):[0-5][0-9]$`
	End string `json:"end"`
	// timeZone is an IANA time zone ("Europe/Berlin"); default UTC. The
	// window follows its daylight-saving changes.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	TimeZone string `json:"timeZone,omitempty"`
}

// RolloutStep is one stage of a staged rollout.
type RolloutStep struct {
	// nodes is how many of the matching nodes have the new spec at the
	// end of the step: a count (at least 1) or a percentage (1%–100%,
	// rounded up).
	// +kubebuilder:validation:XIntOrString
	// +kubebuilder:validation:MaxLength=4
	// +kubebuilder:validation:XValidation:rule="type(self) == int ? self >= 1 : self.matches('^([1-9][0-9]?|100)%$')",message="rolloutStrategy.steps[].nodes: a count of at least 1 or a percentage from 1% to 100%"
	Nodes intstr.IntOrString `json:"nodes"`
	// bake is how long the step's nodes run before the next step starts,
	// watched by the health gate.
	// +optional
	Bake *metav1.Duration `json:"bake,omitempty"`
}

// HealthGate bounds the workload failures a rollout tolerates. A failure
// is a pod of one of the Shim's RuntimeClasses, on a node updated by the
// rollout, that the runtime could not run: its sandbox failed
// (FailedCreatePodSandBox) or a container could not be created or started
// (CreateContainerError, RunContainerError, StartError). A container that
// ran and exited is the application's, and does not count.
type HealthGate struct {
	// maxFailuresPerNode halts the rollout when this many pods fail on one
	// updated node; default 1.
	// +optional
	// +kubebuilder:validation:Minimum=1
	MaxFailuresPerNode *int32 `json:"maxFailuresPerNode,omitempty"`
	// maxFailures halts it when this many fail on the updated nodes
	// together; default 3.
	// +optional
	// +kubebuilder:validation:Minimum=1
	MaxFailures *int32 `json:"maxFailures,omitempty"`
}

// RollingUpdate bounds a rolling rollout.
type RollingUpdate struct {
	// maxUpdate is how many nodes may be changing at once: a count (at
	// least 1) or a percentage of the matching nodes (1%–100%, rounded up,
	// at least one node). Default 1.
	// +optional
	// +kubebuilder:default=1
	// +kubebuilder:validation:XIntOrString
	// +kubebuilder:validation:XValidation:rule="type(self) == int ? self >= 1 : self.matches('^([1-9][0-9]?|100)%$')",message="rolloutStrategy.rolling.maxUpdate: a count of at least 1 or a percentage from 1% to 100%"
	MaxUpdate *intstr.IntOrString `json:"maxUpdate,omitempty"`
}

// ShimStatus is the observed state of a Shim.
type ShimStatus struct {
	// observedGeneration is the generation the status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// conditions: Ready (every matching node has the current spec and the
	// RuntimeClass is published), Progressing (nodes are changing),
	// Degraded (a node failed; the rollout is halted), and kstatus's
	// Reconciling (the operator is working towards the spec) and Stalled
	// (it cannot, without a change: the reason says why).
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// nodes is how many nodes match the selector and can run the shim
	// (skipped nodes are not counted).
	// +optional
	Nodes int32 `json:"nodes"`
	// skippedNodes is how many nodes match the selector but cannot run
	// the shim: not Linux, another container runtime than containerd, an
	// immutable OS, a read-only host (its installer found a directory it
	// writes read-only, or the bundle root noexec, and changed nothing), a
	// node whose image has the shim but whose kubelet does not report its
	// handlers, or no artifact for their platform. They are left alone.
	// +optional
	SkippedNodes int32 `json:"skippedNodes"`
	// driftedNodes is how many nodes labelled as having the current spec
	// no longer serve one of the Shim's handlers (their kubelet's
	// node.status.runtimeHandlers lacks it: reimaged, or containerd's
	// config reverted by config management). They are installed again
	// under maxUpdate, and do not count as updated meanwhile.
	// +optional
	DriftedNodes int32 `json:"driftedNodes,omitempty"`
	// skipped groups the skipped nodes by reason (NotLinux,
	// NotContainerd, ImmutableOS, ReadOnlyHost, HandlerNotReported,
	// NoArtifact).
	// +optional
	// +listType=map
	// +listMapKey=reason
	// +kubebuilder:validation:MaxItems=8
	Skipped []SkippedNodes `json:"skipped,omitempty"`
	// imageSources say how the nodes' installers get the Shim's image
	// (fetchStrategy.type image): ImageVolume (the kubelet mounts it) or
	// Copy (init containers copy its files, where the API server, the
	// node's kubelet or its containerd cannot mount image volumes).
	// +optional
	// +listType=map
	// +listMapKey=way
	// +kubebuilder:validation:MaxItems=2
	ImageSources []ImageSourceNodes `json:"imageSources,omitempty"`
	// updatedNodes have the current spec installed.
	// +optional
	UpdatedNodes int32 `json:"updatedNodes"`
	// inProgressNodes are being installed, upgraded or uninstalled.
	// +optional
	InProgressNodes int32 `json:"inProgressNodes"`
	// failedNodes failed their last operation.
	// +optional
	FailedNodes int32 `json:"failedNodes"`
	// failingNodes lists failed nodes with their reasons (at most 10).
	// +optional
	// +kubebuilder:validation:MaxItems=10
	FailingNodes []NodeFailure `json:"failingNodes,omitempty"`
	// specHash identifies the spec and the pinned artifact the rollout
	// converges to.
	// +optional
	SpecHash string `json:"specHash,omitempty"`
	// retried is the value of the retry annotation the operator last acted
	// on.
	// +optional
	Retried string `json:"retried,omitempty"`
	// retriedSpecHash is the specHash the rollout had when the operator
	// acted on retried: the nodes that request names start again at that
	// target even while other failed nodes halt the rollout. With it, an
	// operator that restarts and kubectl shimkit plan read the retry as
	// the operator acted on it.
	// +optional
	RetriedSpecHash string `json:"retriedSpecHash,omitempty"`
	// artifact is the artifact pinned for the rollout: every node installs
	// exactly this digest, until the spec changes or the artifact is
	// resolved again.
	// +optional
	Artifact *ResolvedArtifact `json:"artifact,omitempty"`
	// rollout is where the rollout of specHash stands: its step, bake,
	// next maintenance window, and a halt or revert.
	// +optional
	Rollout *RolloutStatus `json:"rollout,omitempty"`
	// revisions are the targets that were rolled out to every matching
	// node (their bakes passed), newest first: what onFailure: Revert
	// goes back to. Each one's spec and pinned artifact are kept in the
	// ControllerRevision it names, in the operator's namespace.
	// +optional
	// +kubebuilder:validation:MaxItems=5
	Revisions []Revision `json:"revisions,omitempty"`
}

// RolloutStatus is where the rollout of a target stands.
type RolloutStatus struct {
	// specHash is the target this describes (status.specHash, or the
	// target reverted from).
	SpecHash string `json:"specHash"`
	// startedAt is when the rollout of the target started: the health
	// gate counts the failures seen since.
	StartedAt metav1.Time `json:"startedAt"`
	// step is the current step (0-based) of spec.rolloutStrategy.steps;
	// steps is how many there are.
	// +optional
	Step int32 `json:"step,omitempty"`
	// +optional
	Steps int32 `json:"steps,omitempty"`
	// bakeUntil is when the current step's bake ends.
	// +optional
	BakeUntil *metav1.Time `json:"bakeUntil,omitempty"`
	// nextWindow is when the next maintenance window opens, while nodes
	// wait for one.
	// +optional
	NextWindow *metav1.Time `json:"nextWindow,omitempty"`
	// halt says why the rollout of the target stopped: WorkloadFailures
	// (the health gate tripped; the message names the pods and nodes), or
	// NodeFailed when onFailure: Revert takes the nodes back after a node
	// failed. It stays stopped until the spec changes (or the retry
	// annotation).
	// +optional
	Halt *RolloutHalt `json:"halt,omitempty"`
	// revertedTo is the revision the nodes go back to (onFailure: Revert).
	// +optional
	RevertedTo string `json:"revertedTo,omitempty"`
}

// RolloutHalt is why a rollout stopped.
type RolloutHalt struct {
	Reason  string      `json:"reason"`
	Message string      `json:"message"`
	Time    metav1.Time `json:"time"`
}

// Revision is a target once rolled out to every matching node.
type Revision struct {
	// specHash is the target's hash (status.specHash then).
	SpecHash string `json:"specHash"`
	// digest is the artifact pinned for it, when the fetch pins one.
	// +optional
	Digest string `json:"digest,omitempty"`
	// time is when every matching node had it.
	Time metav1.Time `json:"time"`
	// controllerRevision names the ControllerRevision holding its spec
	// and pinned artifact.
	ControllerRevision string `json:"controllerRevision"`
}

// ResolvedArtifact is the result of resolving the spec's artifact once.
type ResolvedArtifact struct {
	// source is the OCI reference or the URL that was resolved.
	Source string `json:"source"`
	// digest pins it ("sha256:<hex>"): for OCI the digest the reference
	// resolved to (an image index, or a manifest), for HTTP the download.
	// +optional
	Digest string `json:"digest,omitempty"`
	// platforms pins per-platform HTTP artifacts.
	// +optional
	// +listType=map
	// +listMapKey=platform
	// +kubebuilder:validation:MaxItems=2
	Platforms []PlatformDigest `json:"platforms,omitempty"`
	// verifiedBy says what verified the signature ("key sha256:<hex of
	// the public key>", or the keyless issuer and subject); empty when
	// spec.verification is not set.
	// +optional
	VerifiedBy string `json:"verifiedBy,omitempty"`
	// resolvedAt is when the operator resolved it.
	ResolvedAt metav1.Time `json:"resolvedAt"`
	// specHash is the hash of the spec it was resolved for (without the
	// artifact): a spec change resolves again.
	SpecHash string `json:"specHash"`
	// resolveRequest is the value of the resolve annotation it answered.
	// +optional
	ResolveRequest string `json:"resolveRequest,omitempty"`
	// lastError says why the last attempt to resolve again failed (the
	// pinned digest stays); empty after a success.
	// +optional
	LastError string `json:"lastError,omitempty"`
}

// PlatformDigest pins the artifact of one platform.
type PlatformDigest struct {
	Platform string `json:"platform"`
	Digest   string `json:"digest"`
}

// RetryAnnotation, set or changed on a Shim, retries its failed nodes. A
// node's failure is recorded on the Node and halts the rollout until the
// spec changes or an admin asks for a retry. The value names the nodes
// (comma-separated, or "all"), optionally followed by "@" and anything
// that makes the request new:
//
//	kubectl annotate shim spin shim.containerd.x-k8s.io/retry="all@$(date +%s)" --overwrite
//	kubectl annotate shim spin shim.containerd.x-k8s.io/retry="node-a,node-b@$(date +%s)" --overwrite
const RetryAnnotation = "shim.containerd.x-k8s.io/retry"

// ResolveAnnotation, set or changed on a Shim, makes the operator resolve
// its artifact again (kubectl annotate shim NAME
// shim.containerd.x-k8s.io/resolve="$(date +%s)" --overwrite).
const ResolveAnnotation = "shim.containerd.x-k8s.io/resolve"

// SkippedNodes are the nodes skipped for one reason.
type SkippedNodes struct {
	// reason is NotLinux, NotContainerd, ImmutableOS, ReadOnlyHost,
	// HandlerNotReported or NoArtifact.
	Reason string `json:"reason"`
	// count is how many nodes are skipped for this reason.
	Count int32 `json:"count"`
	// nodes names some of them (at most 10, in name order).
	// +optional
	// +kubebuilder:validation:MaxItems=10
	Nodes []string `json:"nodes,omitempty"`
}

// ImageSourceNodes are the nodes that get the Shim's image one way.
type ImageSourceNodes struct {
	// way is ImageVolume or Copy.
	Way string `json:"way"`
	// count is how many nodes get it this way.
	Count int32 `json:"count"`
	// nodes names some of them (at most 10, in name order).
	// +optional
	// +kubebuilder:validation:MaxItems=10
	Nodes []string `json:"nodes,omitempty"`
}

// NodeFailure says why a node failed.
type NodeFailure struct {
	Node    string `json:"node"`
	Reason  string `json:"reason"`
	Message string `json:"message,omitempty"`
}

// HandlerName is the runtime handler: handler, or the RuntimeClass name
// when handler is not set (the API server admits that only when the name
// is a valid handler name). Everything that needs the handler reads it
// here.
func (r RuntimeClassSpec) HandlerName() string {
	if r.Handler != "" {
		return r.Handler
	}
	return r.Name
}
