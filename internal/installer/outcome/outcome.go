package outcome

import (
	"context"
	"errors"

	"github.com/shimkit/shimkit/containerdconfig"
	"github.com/shimkit/shimkit/crioconfig"
	"github.com/shimkit/shimkit/fetch"
	"github.com/shimkit/shimkit/installer/plan"
	"github.com/shimkit/shimkit/internal/installer/bundle"
	"github.com/shimkit/shimkit/internal/installer/layout"
	"github.com/shimkit/shimkit/internal/installer/ownership"
	"github.com/shimkit/shimkit/internal/installer/runtime"
	"github.com/shimkit/shimkit/internal/installer/systemd"
	"github.com/shimkit/shimkit/signature"
)

// Errors of a failed operation, checked with errors.Is.
var (
	// ErrRolledBack: the operation failed and the node was restored: the
	// config byte for byte, the bundle, the units, and a healthy containerd.
	ErrRolledBack = errors.New("failed and rolled back; the node is as it was")
	// ErrRollbackFailed: the operation failed and restoring the node failed
	// too. The node needs attention.
	ErrRollbackFailed = errors.New("FAILED AND THE ROLLBACK FAILED TOO; the node needs attention")
	// ErrInterrupted: the operation was cancelled (SIGTERM, a deadline)
	// and stopped where it was; with ErrRolledBack, the node is as before.
	ErrInterrupted = errors.New("interrupted")
	// ErrCanaryFailed: the canary pod did not start with the handler, or
	// its container did not exit 0 within the canary's timeout.
	ErrCanaryFailed = errors.New("canary pod failed")
)

// reasons maps sentinel errors to reasons, most specific first.
var reasons = []struct {
	err    error
	reason plan.Reason
}{
	// A rollback that met another writer's edit says so first.
	{ownership.ErrConcurrentEdit, plan.ReasonConcurrentEdit},
	{containerdconfig.ErrConcurrentEdit, plan.ReasonConcurrentEdit},
	{crioconfig.ErrConcurrentEdit, plan.ReasonConcurrentEdit},
	{ErrInterrupted, plan.ReasonInterrupted},
	{runtime.ErrHandlerInUse, plan.ReasonHandlerInUse},
	{plan.ErrVersion, plan.ReasonInvalidPlan},
	{plan.ErrInvalid, plan.ReasonInvalidPlan},
	{ownership.ErrReserved, plan.ReasonReserved},
	{layout.ErrReadOnlyHost, plan.ReasonReadOnlyHost},
	{containerdconfig.ErrInvalidHandler, plan.ReasonInvalidPlan},
	{crioconfig.ErrInvalidHandler, plan.ReasonInvalidPlan},
	{runtime.ErrRuntimeUnsupported, plan.ReasonInvalidPlan},
	{crioconfig.ErrReserved, plan.ReasonReserved},
	{crioconfig.ErrRestartStopsPods, plan.ReasonRestartStopsPods},
	{fetch.ErrDigestMismatch, plan.ReasonDigestMismatch},
	{signature.ErrMissing, plan.ReasonSignatureMissing},
	{signature.ErrInvalid, plan.ReasonSignatureInvalid},
	{signature.ErrPolicy, plan.ReasonInvalidPlan},
	{fetch.ErrInsecure, plan.ReasonInsecureTransport},
	{fetch.ErrTooManyRedirects, plan.ReasonInsecureTransport},
	{fetch.ErrUnauthorized, plan.ReasonUnauthorized},
	{fetch.ErrUnsafeArchive, plan.ReasonArtifactInvalid},
	{fetch.ErrLimit, plan.ReasonArtifactInvalid},
	{fetch.ErrTooLarge, plan.ReasonArtifactInvalid},
	{fetch.ErrNoShim, plan.ReasonArtifactInvalid},
	{fetch.ErrPlatform, plan.ReasonArtifactInvalid},
	{bundle.ErrMissingFile, plan.ReasonArtifactInvalid},
	// CRI-O would drop the handler: the bundle's binary is not one.
	{crioconfig.ErrBinary, plan.ReasonArtifactInvalid},
	{fetch.ErrNotFound, plan.ReasonFetchFailed},
	{fetch.ErrTruncated, plan.ReasonFetchFailed},
	{containerdconfig.ErrConflict, plan.ReasonConflict},
	{ownership.ErrConflict, plan.ReasonConflict},
	{crioconfig.ErrForeignHandler, plan.ReasonConflict},
	{crioconfig.ErrNotOurs, plan.ReasonConflict},
	{crioconfig.ErrParse, plan.ReasonConfigInvalid},
	{crioconfig.ErrPending, plan.ReasonConfigInvalid},
	{runtime.ErrAmbiguousRuntime, plan.ReasonConfigInvalid},
	{containerdconfig.ErrParse, plan.ReasonConfigInvalid},
	{containerdconfig.ErrVersion, plan.ReasonConfigInvalid},
	{containerdconfig.ErrTemplate, plan.ReasonConfigNotEditable},
	{containerdconfig.ErrNoDropIn, plan.ReasonConfigInvalid},
	{containerdconfig.ErrUnknownPreset, plan.ReasonConfigInvalid},
	{systemd.ErrUnitFailed, plan.ReasonUnitFailed},
	{ErrCanaryFailed, plan.ReasonCanaryFailed},
	{runtime.ErrShimStuck, plan.ReasonShimStuck},
	{systemd.ErrRestartFailed, plan.ReasonRestartFailed},
	{systemd.ErrNoUnit, plan.ReasonRestartFailed},
	{runtime.ErrUnhealthy, plan.ReasonRestartFailed},
	{context.Canceled, plan.ReasonInterrupted},
	{context.DeadlineExceeded, plan.ReasonInterrupted},
}

// Reason says why an operation failed, from the sentinel errors it wraps;
// an error reading or writing a config file is ConfigInvalid; "" when
// nothing it knows is wrapped.
func Reason(err error) plan.Reason {
	for _, r := range reasons {
		if errors.Is(err, r.err) {
			return r.reason
		}
	}
	var fe *containerdconfig.FileError
	var cfe *crioconfig.FileError
	if errors.As(err, &fe) || errors.As(err, &cfe) {
		return plan.ReasonConfigInvalid
	}
	return ""
}
