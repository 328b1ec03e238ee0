package pin

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
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/shimkit/shimkit/fetch"
	"github.com/shimkit/shimkit/internal/operator/decide"
	"github.com/shimkit/shimkit/internal/operator/shimspec"
	"github.com/shimkit/shimkit/internal/text"
	"github.com/shimkit/shimkit/operator/api/v1alpha1"
	"github.com/shimkit/shimkit/signature"
)

// Pinner pins each Shim's artifact to a digest (resolving a tag or a
// URL, verifying a signature when the spec asks) and remembers, per Shim,
// the artifact it pinned last and its last failed resolution, so that a
// failed one is not asked again before something that can change its
// answer changes or its backoff passed.
type Pinner struct {
	reader    client.Reader
	resolver  Resolver
	namespace string
	backoff   time.Duration
	pins      pins
}

// New returns a Pinner that reads pull secrets and trusted roots from
// namespace through reader, resolves through resolver, waits backoff
// (0: DefaultBackoff) before asking a failed resolution again.
func New(reader client.Reader, resolver Resolver, namespace string, backoff time.Duration) *Pinner {
	if backoff <= 0 {
		backoff = DefaultBackoff
	}
	return &Pinner{reader: reader, resolver: resolver, namespace: namespace, backoff: backoff}
}

// Forget drops what the Pinner remembers of the Shim name (deleted).
func (r *Pinner) Forget(name string) { r.pins.forget(name) }

// Pinned is what Pin found: the artifact the rollout uses, the one the
// status shows (the last one pinned, with the error, when resolving
// failed), why there is none to use (a refusal), and the Events to emit
// once the reconcile's decision is complete.
type Pinned struct {
	Use, Show *v1alpha1.ResolvedArtifact
	Refusal   *shimspec.Refusal
	Notices   []decide.Notice
}

func notice(eventType, reason, note string, args ...any) decide.Notice {
	return decide.Notice{Type: eventType, Reason: reason, Action: "Resolve", Note: fmt.Sprintf(note, args...)}
}

// resolveTimeout bounds one resolution (a large HTTP artifact is streamed
// through sha256).
const resolveTimeout = 5 * time.Minute

// NextAt is when the artifact is resolved again by time (zero: not by
// time): when the interval comes round, or, after a failed resolution,
// not before its backoff passed (failedResolve.retryAt).
func (r *Pinner) NextAt(shim *v1alpha1.Shim, art *v1alpha1.ResolvedArtifact) time.Time {
	var at time.Time
	if iv := shim.Spec.FetchStrategy.ResolveInterval; iv != nil && art != nil {
		at = art.ResolvedAt.Add(iv.Duration)
	}
	if f, ok := r.pins.lastFailure(shim); ok && (art == nil || !at.IsZero() && f.retryAt.After(at)) {
		at = f.retryAt
	}
	return at
}

// Backoff of a resolution that failed: the same question (resolveAsk) is
// asked again DefaultBackoff after the first failure, twice as long
// after each further one, at most resolveBackoffCap (or the resolve
// interval, when shorter) after the last.
const (
	DefaultBackoff    = 30 * time.Second
	resolveBackoffCap = 10 * time.Minute
)

// Pin resolves the Shim's artifact when due, and returns the resolution
// the rollout uses and, when there is none, why (a refusal). A failed
// re-resolution keeps the pinned digest and records the error.
//
// It returns the artifact to install, the one to show in the status (the
// last one pinned, with the error, when resolving failed), the refusal,
// and the Events it found: Pin emits none itself, as it runs while the
// reconcile reads its snapshot.
//
// A failed resolution is not asked again (no registry, no download) until
// something that can change its answer changes: the spec (verification
// included), the resolve annotation, the resolve interval, the pull
// secret's or trusted root's content; or until its backoff passed. In
// between, the same refusal (or the kept digest with its error) stands,
// and no Event is emitted again: a refusal's one Warning Event is the
// install's, once the status does not show it yet (refusal.shown).
func (r *Pinner) Pin(ctx context.Context, shim *v1alpha1.Shim, specHash string) Pinned {
	now := time.Now()
	// The status read may lag behind the last resolution (a cache not yet
	// updated): the pin this process made last stands in for it, so that
	// a stale read never resolves a moved tag mid-rollout.
	shim = r.pins.latest(shim)
	cur := shimspec.PinOf(shim, specHash)
	why := shimspec.ResolveDue(shim, specHash, now)
	if why == "" {
		return Pinned{Use: cur, Show: cur}
	}
	ctx, cancel := context.WithTimeout(ctx, resolveTimeout)
	defer cancel()
	// The spec pins every digest and asks for no signature: nothing to ask
	// a registry (each installer checks the digest).
	static := shimspec.PinnedBySpec(shim.Spec.FetchStrategy) && shim.Spec.Verification == nil
	in := Input{Fetch: shim.Spec.FetchStrategy}
	if !static {
		var err error
		if in, err = r.resolveInput(ctx, shim); err != nil {
			// A read of the cluster, no download: asked again each time.
			return r.resolveFailed(shim, cur, resolveRefusal(err), true)
		}
	}
	ask := resolveAsk(shim, specHash, in)
	if f, ok := r.pins.failure(shim, ask); ok && now.Before(f.retryAt) {
		return r.resolveFailed(shim, cur, f.ref, false)
	}
	var res *Resolved
	var err error
	if static {
		res, err = StaticResolver(nil).Resolve(ctx, in)
	} else {
		res, err = r.resolver.Resolve(ctx, in)
	}
	if err != nil {
		ref := resolveRefusal(err)
		f := r.pins.fail(shim, ask, ref, now, r.backoff)
		log.FromContext(ctx).Info("artifact not resolved", "shim", shim.Name, "reason", ref.Reason, "trigger", why, "attempt", f.attempts, "retry", f.retryAt)
		return r.resolveFailed(shim, cur, ref, true)
	}
	r.pins.succeeded(shim)
	art := &v1alpha1.ResolvedArtifact{
		Source: sourceOf(shim.Spec.FetchStrategy), Digest: res.Digest, Platforms: res.Platforms, VerifiedBy: res.VerifiedBy,
		ResolvedAt: metav1.NewTime(now), SpecHash: shimspec.ResolveKey(shim, specHash), ResolveRequest: shim.Annotations[v1alpha1.ResolveAnnotation],
	}
	pinned := Pinned{Use: art, Show: art}
	if oci := shim.Spec.FetchStrategy.Registry(); oci != nil && oci.PlainHTTP && oci.Insecure && !fetch.LocalRegistry(registryHost(oci.Reference)) {
		pinned.Notices = append(pinned.Notices, notice(corev1.EventTypeWarning, "InsecureRegistry",
			"spec.fetchStrategy.%s.insecure: %s is reached over plain HTTP; anyone on the path can change what the nodes install", shim.Spec.FetchStrategy.Type, registryHost(oci.Reference)))
	}
	if cur != nil && shimspec.TargetHash(shim, specHash, cur) != shimspec.TargetHash(shim, specHash, art) {
		pinned.Notices = append(pinned.Notices, notice(corev1.EventTypeNormal, "ArtifactChanged", "%s now resolves to %s (was %s; resolved on %s): rolling out", art.Source, digestsOf(art), digestsOf(cur), why))
	}
	log.FromContext(ctx).Info("artifact resolved", "shim", shim.Name, "source", art.Source, "digest", digestsOf(art), "trigger", why, "target", shimspec.TargetHash(shim, specHash, art))
	r.pins.put(shim, art)
	return pinned
}

// resolveFailed is pin's answer when resolving failed (fresh) or failed
// before and is not asked again yet. Without a pinned digest for the spec
// the spec is refused: the status shows the last artifact with the error,
// and the refusal's Warning Event is the install's (pin emits none, so
// that a refusal makes one Event, not two). With one, the pinned digest is
// kept, with the error, and a fresh failure gets a Warning Event.
func (r *Pinner) resolveFailed(shim *v1alpha1.Shim, cur *v1alpha1.ResolvedArtifact, ref *shimspec.Refusal, fresh bool) Pinned {
	lastError := text.Truncate(ref.Reason+": "+ref.Message, 512)
	if cur == nil {
		var shown *v1alpha1.ResolvedArtifact
		if old := shim.Status.Artifact; old != nil {
			shown = old.DeepCopy()
			shown.LastError = lastError
		}
		return Pinned{Show: shown, Refusal: ref}
	}
	var notices []decide.Notice
	if fresh {
		notices = append(notices, notice(corev1.EventTypeWarning, ref.Reason, "%s", ref.Message))
	}
	kept := cur.DeepCopy()
	kept.ResolveRequest = shim.Annotations[v1alpha1.ResolveAnnotation]
	kept.LastError = lastError
	r.pins.put(shim, kept)
	return Pinned{Use: kept, Show: kept, Notices: notices}
}

// resolveAsk identifies the question a resolution answers: the spec
// (shimspec.ResolveKey), the resolve annotation, the resolve interval, and what
// was read for it from the cluster (the pull secret's and the trusted
// root's content). A change of any of them asks again at once.
func resolveAsk(shim *v1alpha1.Shim, specHash string, in Input) string {
	data, _ := json.Marshal(struct {
		K, A string
		I    *metav1.Duration
		C, T []byte
	}{shimspec.ResolveKey(shim, specHash), shim.Annotations[v1alpha1.ResolveAnnotation], shim.Spec.FetchStrategy.ResolveInterval, in.DockerConfigJSON, in.TrustedRoot})
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

// pins remembers, per Shim, the artifact this process pinned last, and
// its last failed resolution.
type pins struct {
	mu     sync.Mutex
	byShim map[string]pinned
	failed map[string]failedResolve
}

type pinned struct {
	uid types.UID
	art *v1alpha1.ResolvedArtifact
}

// failedResolve is a Shim's last failed resolution: the question asked
// (resolveAsk), the refusal it answered, how many times in a row the same
// question failed, and when it may be asked again.
type failedResolve struct {
	uid      types.UID
	ask      string
	ref      *shimspec.Refusal
	attempts int
	retryAt  time.Time
}

// retryAfter is how long after its attempts-th failure in a row a question
// is asked again: base doubled per failure before, at most
// resolveBackoffCap, and at most interval (0: none).
func retryAfter(attempts int, base, interval time.Duration) time.Duration {
	wait := base
	for i := 1; i < attempts && wait < resolveBackoffCap; i++ {
		wait *= 2
	}
	wait = min(wait, resolveBackoffCap)
	if interval > 0 {
		wait = min(wait, interval)
	}
	return wait
}

func (p *pins) put(shim *v1alpha1.Shim, art *v1alpha1.ResolvedArtifact) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.byShim == nil {
		p.byShim = map[string]pinned{}
	}
	p.byShim[shim.Name] = pinned{uid: shim.UID, art: art.DeepCopy()}
}

// fail records a failed resolution of ask, and when it may be asked again.
func (p *pins) fail(shim *v1alpha1.Shim, ask string, ref *shimspec.Refusal, now time.Time, base time.Duration) failedResolve {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.failed == nil {
		p.failed = map[string]failedResolve{}
	}
	f := failedResolve{uid: shim.UID, ask: ask, ref: ref, attempts: 1}
	if old, ok := p.failed[shim.Name]; ok && old.uid == shim.UID && old.ask == ask {
		f.attempts = old.attempts + 1
	}
	var interval time.Duration
	if iv := shim.Spec.FetchStrategy.ResolveInterval; iv != nil {
		interval = iv.Duration
	}
	f.retryAt = now.Add(retryAfter(f.attempts, base, interval))
	p.failed[shim.Name] = f
	return f
}

// failure returns the Shim's last failed resolution when it asked ask.
func (p *pins) failure(shim *v1alpha1.Shim, ask string) (failedResolve, bool) {
	f, ok := p.lastFailure(shim)
	return f, ok && f.ask == ask
}

// lastFailure returns the Shim's last failed resolution, whatever it asked.
func (p *pins) lastFailure(shim *v1alpha1.Shim) (failedResolve, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	f, ok := p.failed[shim.Name]
	return f, ok && f.uid == shim.UID
}

// succeeded forgets the Shim's failed resolution.
func (p *pins) succeeded(shim *v1alpha1.Shim) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.failed, shim.Name)
}

func (p *pins) forget(name string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.byShim, name)
	delete(p.failed, name)
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
func (r *Pinner) resolveInput(ctx context.Context, shim *v1alpha1.Shim) (Input, error) {
	in := Input{Fetch: shim.Spec.FetchStrategy, Verification: shim.Spec.Verification}
	if name := shimspec.PullSecretName(shim); name != "" {
		var s corev1.Secret
		if err := r.reader.Get(ctx, types.NamespacedName{Namespace: r.namespace, Name: name}, &s); err != nil {
			return in, fmt.Errorf("spec.fetchStrategy.%s.pullSecretRef: Secret %s/%s: %w", shim.Spec.FetchStrategy.Type, r.namespace, name, err)
		}
		in.DockerConfigJSON = s.Data[corev1.DockerConfigJsonKey]
	}
	if v := shim.Spec.Verification; v != nil && v.Keyless != nil {
		ref := v.Keyless.TrustedRootRef
		var cm corev1.ConfigMap
		if err := r.reader.Get(ctx, types.NamespacedName{Namespace: r.namespace, Name: ref.Name}, &cm); err != nil {
			return in, fmt.Errorf("spec.verification.keyless.trustedRootRef: ConfigMap %s/%s: %w: %w", r.namespace, ref.Name, signature.ErrPolicy, err)
		}
		key := shimspec.TrustedRootKey(ref)
		data, ok := cm.Data[key]
		if !ok {
			return in, fmt.Errorf("spec.verification.keyless.trustedRootRef: ConfigMap %s/%s has no key %s: %w", r.namespace, ref.Name, key, signature.ErrPolicy)
		}
		in.TrustedRoot = []byte(data)
	}
	return in, nil
}

// resolveRefusal classifies a resolution error.
func resolveRefusal(err error) *shimspec.Refusal {
	reason := v1alpha1.ReasonResolveFailed
	switch {
	case errors.Is(err, signature.ErrMissing):
		reason = v1alpha1.ReasonSignatureMissing
	case errors.Is(err, signature.ErrInvalid):
		reason = v1alpha1.ReasonSignatureInvalid
	case errors.Is(err, fetch.ErrInsecure), errors.Is(err, fetch.ErrTooManyRedirects):
		reason = v1alpha1.ReasonInsecureTransport
	}
	return &shimspec.Refusal{Reason: reason, Message: text.Truncate(err.Error(), 1024)}
}

func sourceOf(fs v1alpha1.FetchStrategy) string {
	switch {
	case fs.Registry() != nil:
		return fs.Registry().Reference
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
