package installer

import (
	"errors"

	"github.com/shimkit/shimkit/installer/plan"
	"github.com/shimkit/shimkit/internal/installer/outcome"
	"github.com/shimkit/shimkit/internal/installer/runtime"
)

// Report turns what an operation returned into the plan's typed result:
// the outcome, and for a failure the reason constant and the message.
func Report(p *plan.NodePlan, res *Result, err error) *plan.NodeResult {
	out := plan.NewResult(p)
	if res != nil {
		out.Digest, out.Files, out.VerifiedBy, out.Drift = res.Digest, res.Files, res.VerifiedBy, res.Drift
		out.Changed, out.Restarted = res.Changed, res.Restarted
		out.Runtime, out.RestartedUnit = res.Runtime, res.RestartedUnit
		out.RestartDuration, out.Duration = plan.Duration(res.RestartDuration), plan.Duration(res.Duration)
		out.CanaryDuration = plan.Duration(res.CanaryDuration)
	}
	switch {
	case err == nil:
		out.Outcome = plan.Succeeded
		return out
	case errors.Is(err, ErrRollbackFailed):
		out.Outcome = plan.RollbackFailed
	case errors.Is(err, ErrRolledBack):
		out.Outcome = plan.RolledBack
	default:
		out.Outcome = plan.Failed
	}
	out.Reason, out.Message = ReasonOf(err), err.Error()
	out.InUse, out.Hang = runtime.Details(err)
	return out
}

// ReportAll turns what InstallAll returned into one result per plan, in
// plan order. When the operation failed, the plan whose step failed gets
// the failure's reason; the plans undone with it get ReasonSiblingFailed
// (and so do all when the failure was in the step they share, containerd's
// one restart, or none of them can be blamed), except when the operation
// was interrupted, which every plan reports as such. A plan that
// committed before the failure reports Succeeded.
func ReportAll(plans []*plan.NodePlan, res []*Result, err error) []*plan.NodeResult {
	out := make([]*plan.NodeResult, len(plans))
	var se *stepError
	blamed := errors.As(err, &se) && !se.shared
	for k, p := range plans {
		var r *Result
		if k < len(res) {
			r = res[k]
		}
		switch {
		case err == nil || r != nil:
			out[k] = Report(p, r, nil)
		case len(plans) == 1 || ReasonOf(err) == plan.ReasonInterrupted || blamed && se.shim == p.Shim.Name:
			out[k] = Report(p, nil, err)
		default:
			out[k] = Report(p, nil, err)
			out[k].Reason = plan.ReasonSiblingFailed
			if blamed {
				out[k].Message = "undone with Shim " + se.shim + "'s failure: " + err.Error()
			} else {
				out[k].Message = "the Shims' plans failed together, and not one can be blamed; each is installed again alone: " + err.Error()
			}
		}
	}
	return out
}

// ReasonOf says why an operation failed, from the sentinel errors it
// wraps. A failed fetch without a more specific cause is FetchFailed; an
// error reading or writing a config file is ConfigInvalid; anything else
// NodeError.
func ReasonOf(err error) plan.Reason {
	if err == nil {
		return ""
	}
	if r := outcome.Reason(err); r != "" {
		return r
	}
	var se *stepError
	if errors.As(err, &se) && se.step == (stageBundle{}).name() {
		return plan.ReasonFetchFailed
	}
	return plan.ReasonNodeError
}

// stepError names the step an error came from, and the Shim whose step
// it was; shared: the step of several Shims' plans (InstallAll's one
// restart), whose failure no one of them can be blamed for.
type stepError struct {
	step, shim string
	shared     bool
	err        error
}

func (e *stepError) Error() string { return e.step + ": " + e.err.Error() }
func (e *stepError) Unwrap() error { return e.err }
