package operator

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/shimkit/shimkit/fetch"
	"github.com/shimkit/shimkit/operator/api/v1alpha1"
	"github.com/shimkit/shimkit/signature"
)

// resolveTimeout bounds one resolution (a large HTTP artifact is streamed
// through sha256).
const resolveTimeout = 5 * time.Minute

// resolveKey identifies what a resolution answers: the spec's hash and its
// verification. A change of either resolves again.
func resolveKey(shim *v1alpha1.Shim, specHash string) string {
	if shim.Spec.Verification == nil {
		return specHash
	}
	data, _ := json.Marshal(struct {
		H string
		V *v1alpha1.Verification
	}{specHash, shim.Spec.Verification})
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])[:16]
}

// pinnedBySpec reports whether the spec itself pins the artifact (a digest
// reference; a sha256 for every URL), so that resolving adds nothing to
// what is installed.
func pinnedBySpec(fs v1alpha1.FetchStrategy) bool {
	switch {
	case fs.OCI != nil:
		_, _, ok := cutDigest(fs.OCI.Reference)
		return ok
	case fs.AnonHTTP != nil:
		if fs.AnonHTTP.Location != "" && fs.AnonHTTP.SHA256 == "" {
			return false
		}
		for _, p := range fs.AnonHTTP.Platforms {
			if p.SHA256 == "" {
				return false
			}
		}
		return true
	}
	return false
}

// cutDigest splits registry/repo@sha256:<hex> into the repository and the
// hex digest.
func cutDigest(ref string) (repo, hexDigest string, ok bool) {
	repo, d, ok := strings.Cut(ref, "@sha256:")
	return repo, d, ok
}

// targetHash identifies what a node installs: the spec and, unless the
// spec pins it itself, the resolved artifact. A moved tag or changed URL
// content, once resolved, is a new target: a rolling upgrade.
func targetHash(shim *v1alpha1.Shim, specHash string, art *v1alpha1.ResolvedArtifact) string {
	if art == nil || pinnedBySpec(shim.Spec.FetchStrategy) {
		return specHash
	}
	data, _ := json.Marshal(struct {
		H string
		D string
		P []v1alpha1.PlatformDigest
	}{specHash, art.Digest, art.Platforms})
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])[:16]
}

// pinOf returns the resolution the status holds for the Shim's current
// spec, or nil.
func pinOf(shim *v1alpha1.Shim, specHash string) *v1alpha1.ResolvedArtifact {
	art := shim.Status.Artifact
	if art == nil || art.SpecHash != resolveKey(shim, specHash) || art.Digest == "" && len(art.Platforms) == 0 {
		return nil
	}
	return art
}

// resolveDue says why the artifact must be resolved now ("" when the
// pinned one stands).
func resolveDue(shim *v1alpha1.Shim, specHash string, now time.Time) string {
	art := pinOf(shim, specHash)
	switch {
	case art == nil:
		return "spec"
	case art.ResolveRequest != shim.Annotations[v1alpha1.ResolveAnnotation]:
		return "annotation"
	case shim.Spec.FetchStrategy.ResolveInterval != nil && !now.Before(art.ResolvedAt.Add(shim.Spec.FetchStrategy.ResolveInterval.Duration)):
		return "interval"
	}
	return ""
}

// nextResolve is how long until the interval resolves again (0: never).
func nextResolve(shim *v1alpha1.Shim, art *v1alpha1.ResolvedArtifact, now time.Time) time.Duration {
	iv := shim.Spec.FetchStrategy.ResolveInterval
	if iv == nil || art == nil {
		return 0
	}
	return max(art.ResolvedAt.Add(iv.Duration).Sub(now), time.Second)
}

// pin resolves the Shim's artifact when due, and returns the resolution
// the rollout uses and, when there is none, why (a refusal). A failed
// re-resolution keeps the pinned digest and records the error.
//
// It returns the artifact to install, the one to show in the status (the
// last one pinned, with the error, when resolving failed) and the refusal.
func (r *Reconciler) pin(ctx context.Context, shim *v1alpha1.Shim, specHash string) (use, show *v1alpha1.ResolvedArtifact, _ *refusal) {
	now := time.Now()
	// The status read may lag behind the last resolution (a cache not yet
	// updated): the pin this process made last stands in for it, so that
	// a stale read never resolves a moved tag mid-rollout.
	shim = r.pins.latest(shim)
	cur := pinOf(shim, specHash)
	why := resolveDue(shim, specHash, now)
	if why == "" {
		return cur, cur, nil
	}
	ctx, cancel := context.WithTimeout(ctx, resolveTimeout)
	defer cancel()
	var res *Resolved
	var err error
	if pinnedBySpec(shim.Spec.FetchStrategy) && shim.Spec.Verification == nil {
		// The spec pins every digest and asks for no signature: nothing to
		// ask a registry (each installer checks the digest).
		res, err = StaticResolver(nil).Resolve(ctx, ResolveInput{Fetch: shim.Spec.FetchStrategy})
	} else {
		var in ResolveInput
		if in, err = r.resolveInput(ctx, shim); err == nil {
			res, err = r.opts.Resolver.Resolve(ctx, in)
		}
	}
	if err != nil {
		ref := resolveRefusal(err)
		r.event(shim, nil, corev1.EventTypeWarning, ref.reason, "Resolve", "%s", ref.message)
		lastError := truncate(ref.reason+": "+ref.message, 512)
		if cur == nil {
			var shown *v1alpha1.ResolvedArtifact
			if old := shim.Status.Artifact; old != nil {
				shown = old.DeepCopy()
				shown.LastError = lastError
			}
			return nil, shown, ref
		}
		kept := cur.DeepCopy()
		kept.ResolveRequest = shim.Annotations[v1alpha1.ResolveAnnotation]
		kept.LastError = lastError
		r.pins.put(shim, kept)
		return kept, kept, nil
	}
	art := &v1alpha1.ResolvedArtifact{
		Source: sourceOf(shim.Spec.FetchStrategy), Digest: res.Digest, Platforms: res.Platforms, VerifiedBy: res.VerifiedBy,
		ResolvedAt: metav1.NewTime(now), SpecHash: resolveKey(shim, specHash), ResolveRequest: shim.Annotations[v1alpha1.ResolveAnnotation],
	}
	if oci := shim.Spec.FetchStrategy.OCI; oci != nil && oci.PlainHTTP && oci.Insecure && !fetch.LocalRegistry(registryHost(oci.Reference)) {
		r.event(shim, nil, corev1.EventTypeWarning, "InsecureRegistry", "Resolve",
			"spec.fetchStrategy.oci.insecure: %s is reached over plain HTTP; anyone on the path can change what the nodes install", registryHost(oci.Reference))
	}
	if cur != nil && targetHash(shim, specHash, cur) != targetHash(shim, specHash, art) {
		r.event(shim, nil, corev1.EventTypeNormal, "ArtifactChanged", "Resolve", "%s now resolves to %s (was %s; resolved on %s): rolling out", art.Source, digestsOf(art), digestsOf(cur), why)
	}
	log.FromContext(ctx).Info("artifact resolved", "shim", shim.Name, "source", art.Source, "digest", digestsOf(art), "trigger", why, "target", targetHash(shim, specHash, art))
	r.pins.put(shim, art)
	return art, art, nil
}

// pins remembers, per Shim, the artifact this process pinned last.
type pins struct {
	mu     sync.Mutex
	byShim map[string]pinned
}

type pinned struct {
	uid types.UID
	art *v1alpha1.ResolvedArtifact
}

func (p *pins) put(shim *v1alpha1.Shim, art *v1alpha1.ResolvedArtifact) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.byShim == nil {
		p.byShim = map[string]pinned{}
	}
	p.byShim[shim.Name] = pinned{uid: shim.UID, art: art.DeepCopy()}
}

func (p *pins) forget(name string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.byShim, name)
}

// latest returns shim, with the artifact pinned last in its status when
// the status read is older than that.
func (p *pins) latest(shim *v1alpha1.Shim) *v1alpha1.Shim {
	p.mu.Lock()
	defer p.mu.Unlock()
	mem, ok := p.byShim[shim.Name]
	if !ok || mem.uid != shim.UID {
		return shim
	}
	if st := shim.Status.Artifact; st != nil && !st.ResolvedAt.Before(&mem.art.ResolvedAt) && st.SpecHash == mem.art.SpecHash && st.LastError == mem.art.LastError {
		return shim
	}
	out := shim.DeepCopy()
	out.Status.Artifact = mem.art.DeepCopy()
	return out
}

// resolveInput reads what resolving needs from the cluster: the pull
// secret and the trusted root, from the operator's namespace, uncached.
func (r *Reconciler) resolveInput(ctx context.Context, shim *v1alpha1.Shim) (ResolveInput, error) {
	in := ResolveInput{Fetch: shim.Spec.FetchStrategy, Verification: shim.Spec.Verification}
	if name := pullSecretName(shim); name != "" {
		var s corev1.Secret
		if err := r.reader.Get(ctx, types.NamespacedName{Namespace: r.opts.Namespace, Name: name}, &s); err != nil {
			return in, fmt.Errorf("spec.fetchStrategy.oci.pullSecretRef: Secret %s/%s: %w", r.opts.Namespace, name, err)
		}
		in.DockerConfigJSON = s.Data[corev1.DockerConfigJsonKey]
	}
	if v := shim.Spec.Verification; v != nil && v.Keyless != nil {
		ref := v.Keyless.TrustedRootRef
		var cm corev1.ConfigMap
		if err := r.reader.Get(ctx, types.NamespacedName{Namespace: r.opts.Namespace, Name: ref.Name}, &cm); err != nil {
			return in, fmt.Errorf("spec.verification.keyless.trustedRootRef: ConfigMap %s/%s: %w: %w", r.opts.Namespace, ref.Name, signature.ErrPolicy, err)
		}
		key := trustedRootKey(ref)
		data, ok := cm.Data[key]
		if !ok {
			return in, fmt.Errorf("spec.verification.keyless.trustedRootRef: ConfigMap %s/%s has no key %s: %w", r.opts.Namespace, ref.Name, key, signature.ErrPolicy)
		}
		in.TrustedRoot = []byte(data)
	}
	return in, nil
}

func trustedRootKey(ref v1alpha1.ConfigMapKeyReference) string {
	if ref.Key == "" {
		return v1alpha1.DefaultTrustedRootKey
	}
	return ref.Key
}

// resolveRefusal classifies a resolution error.
func resolveRefusal(err error) *refusal {
	reason := v1alpha1.ReasonResolveFailed
	switch {
	case errors.Is(err, signature.ErrMissing):
		reason = v1alpha1.ReasonSignatureMissing
	case errors.Is(err, signature.ErrInvalid):
		reason = v1alpha1.ReasonSignatureInvalid
	case errors.Is(err, fetch.ErrInsecure), errors.Is(err, fetch.ErrTooManyRedirects):
		reason = v1alpha1.ReasonInsecureTransport
	}
	return &refusal{reason: reason, message: truncate(err.Error(), 1024)}
}

func sourceOf(fs v1alpha1.FetchStrategy) string {
	switch {
	case fs.OCI != nil:
		return fs.OCI.Reference
	case fs.AnonHTTP != nil && fs.AnonHTTP.Location != "":
		return fs.AnonHTTP.Location
	case fs.AnonHTTP != nil && len(fs.AnonHTTP.Platforms) > 0:
		return fs.AnonHTTP.Platforms[0].Location
	}
	return ""
}

func digestsOf(a *v1alpha1.ResolvedArtifact) string {
	parts := []string{}
	if a.Digest != "" {
		parts = append(parts, a.Digest)
	}
	for _, p := range a.Platforms {
		parts = append(parts, p.Platform+"="+p.Digest)
	}
	return strings.Join(parts, ", ")
}

// registryHost is the registry of an OCI reference.
func registryHost(ref string) string {
	host, _, _ := strings.Cut(ref, "/")
	return host
}
