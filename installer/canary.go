package installer

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/shimkit/shimkit/installer/plan"
)

// CanaryRunner runs a plan's canary pod and tells whether it ran to a
// zero exit.
type CanaryRunner interface {
	RunCanary(ctx context.Context, c plan.Canary) error
}

var _ CanaryRunner = CanaryFunc(nil)

// CanaryFunc adapts a function to CanaryRunner, for tests.
type CanaryFunc func(ctx context.Context, c plan.Canary) error

// RunCanary calls f.
func (f CanaryFunc) RunCanary(ctx context.Context, c plan.Canary) error { return f(ctx, c) }

// ErrCanaryFailed: the canary pod did not start with the handler, or its
// container did not exit 0 within the canary's timeout.
var ErrCanaryFailed = errors.New("canary pod failed")

// runCanary is the install step after the restart: when the node's
// containerd has the change (a restart, or a new bundle behind an
// unchanged config), the plan's canary must pass before the install
// commits; a failure rolls everything back.
type runCanary struct{}

func (runCanary) name() string { return "canaried" }

func (runCanary) do(ctx context.Context, r *run) error {
	c := r.plan.Canary
	if c == nil || !r.rt.restarts || !r.restarted && !r.changed {
		return nil
	}
	if r.i.Canary == nil {
		return fmt.Errorf("%w: %w", ErrCanaryFailed, ErrNoCanaryRunner)
	}
	if r.restarted {
		if err := settle(ctx, r.backAt, r.i.CanarySettle); err != nil {
			return err
		}
	}
	start := time.Now()
	if err := r.i.Canary.RunCanary(ctx, *c); err != nil {
		return err
	}
	r.canaryDur = time.Since(start)
	r.i.step("canary-passed", "handler", c.Handler, "duration", r.canaryDur)
	return nil
}

func (runCanary) undo(context.Context, *run) error { return nil }

// DefaultCanarySettle is Installer.CanarySettle's default: past the
// kubelet's second reconnect attempt. Measured on the end-to-end cluster:
// canaries created at once after the restart took 16–17s when the kubelet
// had not reconnected yet (FailedCreatePodSandBox: connection error), 3–5s
// otherwise.
const DefaultCanarySettle = 3 * time.Second

// settle waits until d (DefaultCanarySettle when 0) has passed since back.
func settle(ctx context.Context, back time.Time, d time.Duration) error {
	if d == 0 {
		d = DefaultCanarySettle
	}
	wait := time.Until(back.Add(d))
	if d < 0 || back.IsZero() || wait <= 0 {
		return nil
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// ErrNoCanaryRunner: the plan asks for a canary and the Installer has no
// CanaryRunner to run it.
var ErrNoCanaryRunner = errors.New("the plan has a canary and the installer no canary runner (Installer.Canary)")
