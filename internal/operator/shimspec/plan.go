package shimspec

import (
	"errors"
	"fmt"
	"time"

	"oras.land/oras-go/v2/registry"

	corev1 "k8s.io/api/core/v1"

	"github.com/shimkit/shimkit/installer/plan"
	"github.com/shimkit/shimkit/internal/operator/nodejob"
	"github.com/shimkit/shimkit/internal/operator/nodeview"
	"github.com/shimkit/shimkit/operator/api/v1alpha1"
)

// ErrNoArtifact: the Shim names no artifact for the node's platform (only
// per-platform artifacts, none of them the node's).
var ErrNoArtifact = errors.New("no artifact for the node's platform")

// ErrNotPinned: an image artifact named by a tag has no digest yet (the
// operator resolves it before any node is planned; a plan built without
// the resolution, BuildPlan's, cannot name what the kubelet must pull).
var ErrNotPinned = errors.New("not pinned to a digest yet")

// Settings are what a plan takes of the operator's options.
type Settings struct {
	// InstallerImage runs the canary pod unless spec.canary.image is set.
	InstallerImage string
	// Namespace is where the Jobs and canary pods run; a pull secret
	// elsewhere is refused (empty: not checked).
	Namespace string
	// Preset and ConfigMode are the restart settings every plan carries.
	Preset, ConfigMode string
	// RestartTimeout bounds the runtime's restart (0: the installer's).
	RestartTimeout time.Duration
}

// Defaults of sandboxer daemons.
const (
	addressPlaceholder = "$(ADDRESS)"
	sandboxerSocketDir = "/run/shimkit"
)

// BuildPlan returns the NodePlan that installs the Shim on the node
// (plan.OpInstall) or removes it (plan.OpUninstall). It is the one place
// where the Shim API's defaults are applied:
//
//   - handlers: the primary (spec.runtimeClass.handler with the top-level
//     runtime fields) first, then spec.handlers; runtimeType defaults to
//     io.containerd.<handler>.v2; runtimeOptions become a map typed as
//     plan.Decode types it (whole numbers int64);
//   - files: default one, the artifact's containerd-shim-* file placed as
//     the primary runtime type's binary (containerd-shim-<x>-<vN>), 0755;
//     a file's Target defaults to its path (the base name when the path is
//     a pattern), its mode to 0644, or 0755 when the Target is a handler's
//     shim binary;
//   - a handler's runtimePath defaults to $(BUNDLE_DIR)/<its shim binary>
//     when the bundle has a file of that name, and stays empty otherwise
//     (containerd finds its own shim, such as runc's with BinaryName);
//   - sandboxers: unit shimkit-<name>.service, address
//     /run/shimkit/<name>.sock, $(ADDRESS) in the command replaced by it;
//   - a handler's adopt flag is its runtimeClass.adoptHandler;
//   - the artifact of the node's platform, its sha256 as the digest, the
//     pull secret at the path the Job mounts it;
//   - with spec.migrateFrom, Migrate (from runtime-class-manager, for the
//     primary handler) on a node that carries runtime-class-manager's
//     label for that Shim (RCMLabelValues) and no label of this Shim's;
//   - the canary (unless spec.canary.enabled is false) with the primary
//     handler: image o.InstallerImage with args ["canary"] unless
//     spec.canary.image is set, timeout DefaultCanaryTimeout, the
//     RuntimeClass CanaryRuntimeClass, created in o.Namespace (none
//     without an image or a namespace);
//
// A verify plan is the install plan without a canary: the installer
// compares the node with it and changes nothing.
//
// An uninstall plan carries only the Shim's identity, the operation and
// the restart settings: the node's state says what to remove. The plan is
// validated; an error names the node and the field. An install plan is
// refused, whatever the node, for a runtime type of containerd's own shims
// without runtimeOptions.BinaryName or with a runtimePath (ErrReserved),
// for a pull secret outside o.Namespace (ErrPullSecretNamespace; not
// checked when o.Namespace is empty), and for a spec.migrateFrom whose
// Shim is not the primary handler; for a node of a platform the Shim has
// no artifact for (ErrNoArtifact).
func BuildPlan(shim *v1alpha1.Shim, node *corev1.Node, op plan.Operation, o Settings) (*plan.NodePlan, error) {
	h := nodeview.SpecHash(shim)
	art := PinOf(shim, h)
	return Build(shim, node, op, o, Target{Hash: TargetHash(shim, h, art), Art: art})
}

// Target is what a rollout installs: its hash (TargetHash) and the
// artifact pinned for it (nil: what the spec names).
type Target struct {
	Hash string
	Art  *v1alpha1.ResolvedArtifact
}

// Build is BuildPlan with the Target computed once.
func Build(shim *v1alpha1.Shim, node *corev1.Node, op plan.Operation, o Settings, t Target) (*plan.NodePlan, error) {
	p := plan.New(plan.ShimRef{Name: shim.Name, UID: string(shim.UID)}, op)
	p.Node = node.Name
	p.Runtime = planRuntime(node)
	p.Restart = plan.Restart{Preset: o.Preset, ConfigMode: o.ConfigMode, Timeout: plan.Duration(o.RestartTimeout)}
	if op == plan.OpInstall || op == plan.OpVerify {
		if err := Validate(shim, o); err != nil {
			return nil, fmt.Errorf("plan of Shim %s for node %s: %w", shim.Name, node.Name, err)
		}
		if err := fillInstall(p, shim, node, t, o); err != nil {
			return nil, fmt.Errorf("plan of Shim %s for node %s: %w", shim.Name, node.Name, err)
		}
		if op == plan.OpVerify {
			p.Canary = nil // a verification changes nothing, and runs no pod
		}
	}
	if err := p.Validate(); err != nil {
		return nil, fmt.Errorf("plan of Shim %s for node %s: %w", shim.Name, node.Name, err)
	}
	return p, nil
}

func fillInstall(p *plan.NodePlan, shim *v1alpha1.Shim, node *corev1.Node, t Target, o Settings) error {
	var err error
	p.SpecHash = t.Hash
	if p.Artifact, err = artifactFor(shim, node, t.Art); err != nil {
		return err
	}
	if p.Handlers, err = handlersOf(shim); err != nil {
		return err
	}
	p.Files = filesOf(shim, p.Handlers)
	for i := range p.Handlers {
		h := &p.Handlers[i]
		// Never containerd's own shim from the bundle: a reserved type
		// runs containerd's.
		if bin := binaryName(h.RuntimeType); h.RuntimePath == "" && !v1alpha1.IsReservedRuntimeType(h.RuntimeType) && hasFile(p.Files, bin) {
			h.RuntimePath = plan.BundleDirPlaceholder + "/" + bin
		}
	}
	p.Sandboxers = sandboxersOf(shim)
	p.Migrate = migrationFor(shim, node)
	p.Canary = canaryOf(shim, p.Handlers, o)
	return nil
}

// DefaultCanaryTimeout bounds a canary whose spec names no timeout.
const DefaultCanaryTimeout = time.Minute

// canaryOf is the plan's canary: the spec's, defaulted, with the primary
// handler (nil when disabled, when the Shim has no handler, or when no
// image is known: BuildPlan called without an installer image for a spec
// that names none).
func canaryOf(shim *v1alpha1.Shim, handlers []plan.Handler, o Settings) *plan.Canary {
	if !shim.Spec.CanaryEnabled() || len(handlers) == 0 {
		return nil
	}
	if o.Namespace == "" {
		return nil
	}
	c := &plan.Canary{
		Handler: handlers[0].Name, RuntimeClass: CanaryRuntimeClass(shim.Name), Namespace: o.Namespace,
		Image: o.InstallerImage, Args: []string{"canary"}, Timeout: plan.Duration(DefaultCanaryTimeout),
	}
	if sc := shim.Spec.Canary; sc != nil {
		if sc.Image != "" {
			c.Image, c.Args = sc.Image, nil
		}
		if len(sc.Command) > 0 {
			c.Command = sc.Command
		}
		if len(sc.Args) > 0 {
			c.Args = sc.Args
		}
		if sc.Timeout != nil {
			c.Timeout = plan.Duration(sc.Timeout.Duration)
		}
	}
	if c.Image == "" {
		return nil
	}
	return c
}

// artifactFor picks the Shim's artifact for the node's platform, pinned
// to art's digest (nil: the spec's own, if any).
func artifactFor(shim *v1alpha1.Shim, node *corev1.Node, art *v1alpha1.ResolvedArtifact) (*plan.Artifact, error) {
	fs := shim.Spec.FetchStrategy
	platform := nodeview.PlatformOf(node)
	a := &plan.Artifact{Platform: platform}
	switch {
	case fs.Type == v1alpha1.FetchAnonHTTP && fs.AnonHTTP != nil:
		pa, ok := nodeview.HTTPArtifact(fs, platform)
		if !ok {
			return nil, fmt.Errorf("spec.fetchStrategy.anonHttp: %w (%s)", ErrNoArtifact, platform)
		}
		loc, sum, sig := pa.Location, pa.SHA256, pa.Signature
		pinned := ""
		switch {
		case pa.Platform != "":
			pinned = platformDigest(art, platform)
		case art != nil:
			pinned = art.Digest
		}
		a.Type, a.URL, a.Digest = plan.SourceHTTP, loc, pinned
		if sum != "" {
			a.Digest = "sha256:" + sum
		}
		if shim.Spec.Verification != nil {
			a.SignatureURL = sig
		}
	case fs.Type == v1alpha1.FetchOCI && fs.OCI != nil:
		a.Type, a.Reference, a.PlainHTTP, a.Insecure = plan.SourceOCI, fs.OCI.Reference, fs.OCI.PlainHTTP, fs.OCI.Insecure
		if _, sum, ok := cutDigest(fs.OCI.Reference); ok {
			a.Digest = "sha256:" + sum
		} else if art != nil {
			a.Digest = art.Digest
		}
		if fs.OCI.PullSecretRef != nil {
			a.PullSecretPath = nodejob.PullSecretPath
		}
	case fs.Type == v1alpha1.FetchImage && fs.Image != nil:
		return imageArtifact(shim, fs.Image, art, a)
	default:
		return nil, fmt.Errorf("spec.fetchStrategy: type %q without its settings", fs.Type)
	}
	a.Verification = verificationOf(shim.Spec.Verification)
	return a, nil
}

// imageArtifact is the Shim's image pinned to its digest (the spec's, or
// art's), at its directory in the installer's pod. The kubelet pulls
// exactly that digest on every node; the operator verified its signature
// when it pinned it, so the plan carries no verification.
func imageArtifact(shim *v1alpha1.Shim, img *v1alpha1.OCIFetch, art *v1alpha1.ResolvedArtifact, a *plan.Artifact) (*plan.Artifact, error) {
	ref, err := registry.ParseReference(img.Reference)
	if err != nil {
		return nil, fmt.Errorf("spec.fetchStrategy.image.reference %q: %w", img.Reference, err)
	}
	d := ""
	if _, sum, ok := cutDigest(img.Reference); ok {
		d = "sha256:" + sum
	} else if art != nil {
		d = art.Digest
	}
	if d == "" {
		return nil, fmt.Errorf("%w: spec.fetchStrategy.image.reference %s", ErrNotPinned, img.Reference)
	}
	a.Type, a.Digest, a.Path = plan.SourceImage, d, nodejob.ImageDir(shim.Name)
	a.Reference = ref.Registry + "/" + ref.Repository + "@" + d
	return a, nil
}

// platformDigest is the digest art pins for a platform's artifact.
func platformDigest(art *v1alpha1.ResolvedArtifact, platform string) string {
	if art == nil {
		return ""
	}
	for _, p := range art.Platforms {
		if p.Platform == platform {
			return p.Digest
		}
	}
	return ""
}

// verificationOf is the plan's copy of spec.verification; the trusted
// root is read where the Job mounts its ConfigMap.
func verificationOf(v *v1alpha1.Verification) *plan.Verification {
	if v == nil {
		return nil
	}
	out := &plan.Verification{PublicKeys: v.PublicKeys}
	if k := v.Keyless; k != nil {
		out.Keyless = &plan.Keyless{Issuer: k.Issuer, Subject: k.Subject, SubjectRegExp: k.SubjectRegExp, TrustedRootPath: nodejob.TrustedRootPath}
	}
	return out
}
