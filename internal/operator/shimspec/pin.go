package shimspec

import (
	"strings"

	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"time"

	"github.com/shimkit/shimkit/operator/api/v1alpha1"
)

// ResolveKey identifies what a resolution answers: the spec's hash and its
// verification. A change of either resolves again.
func ResolveKey(shim *v1alpha1.Shim, specHash string) string {
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

// PinnedBySpec reports whether the spec itself pins the artifact (a digest
// reference; a sha256 for every URL), so that resolving adds nothing to
// what is installed.
func PinnedBySpec(fs v1alpha1.FetchStrategy) bool {
	switch {
	case fs.Registry() != nil:
		_, _, ok := cutDigest(fs.Registry().Reference)
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

// TargetHash identifies what a node installs: the spec and, unless the
// spec pins it itself, the resolved artifact. A moved tag or changed URL
// content, once resolved, is a new Target: a rolling upgrade.
func TargetHash(shim *v1alpha1.Shim, specHash string, art *v1alpha1.ResolvedArtifact) string {
	if art == nil || PinnedBySpec(shim.Spec.FetchStrategy) {
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

// PinOf returns the resolution the status holds for the Shim's current
// spec, or nil.
func PinOf(shim *v1alpha1.Shim, specHash string) *v1alpha1.ResolvedArtifact {
	art := shim.Status.Artifact
	if art == nil || art.SpecHash != ResolveKey(shim, specHash) || art.Digest == "" && len(art.Platforms) == 0 {
		return nil
	}
	return art
}

// ResolveDue says why the artifact must be resolved now ("" when the
// pinned one stands).
func ResolveDue(shim *v1alpha1.Shim, specHash string, now time.Time) string {
	art := PinOf(shim, specHash)
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

// cutDigest splits registry/repo@sha256:<hex> into the repository and the
// digest's hex (ok: the reference pins one), as package resolve reads it.
func cutDigest(ref string) (repo, hexDigest string, ok bool) {
	return strings.Cut(ref, "@sha256:")
}
