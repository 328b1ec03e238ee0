package runtime

import (
	"context"
	"time"
)

// RestartHealthy restarts the runtime and waits until it is ready
// (whatever handlers it has). A unit at its start limit is reset by the
// systemd Restarter itself.
//
// A failure says what the node shows when something there is stuck (a
// *HangError): the unit still starting, a shim stopped.
func (n *Node) RestartHealthy(ctx context.Context) error {
	if err := n.Restart(ctx); err != nil {
		return diagnosed(ctx, n, err)
	}
	return diagnosed(ctx, n, n.Check(ctx, "", true))
}

// RestartWithin restarts the runtime, the restart job bounded by timeout:
// CRI-O's crio.service has TimeoutStartSec=0, so a CRI-O that hangs in
// its start (a runtime_path that never answers --version) would keep the
// job running for ever.
// A failure is diagnosed as RestartHealthy's.
func (n *Node) RestartWithin(ctx context.Context, timeout time.Duration) error {
	rctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	return diagnosed(ctx, n, n.Restart(rctx))
}

// Await checks that the runtime came back with every handler of present
// and without those of absent; with neither, that it is ready. A failure
// is diagnosed as RestartHealthy's.
func (n *Node) Await(ctx context.Context, present, absent []string) error {
	return diagnosed(ctx, n, await(ctx, n, present, absent))
}

func await(ctx context.Context, n *Node, present, absent []string) error {
	if len(present)+len(absent) == 0 {
		return n.Check(ctx, "", true)
	}
	for _, name := range present {
		if err := n.Check(ctx, name, true); err != nil {
			return err
		}
	}
	for _, name := range absent {
		if err := n.Check(ctx, name, false); err != nil {
			return err
		}
	}
	return nil
}

// DefaultSettle is how long after the runtime came back from a restart a
// pod is given to the kubelet: past the kubelet's second reconnect attempt
// (gRPC's backoff: 1s, then ×1.6). Measured on the end-to-end cluster:
// canaries created at once after the restart took 16–17s when the kubelet
// had not reconnected yet (FailedCreatePodSandBox: connection error), 3–5s
// otherwise.
const DefaultSettle = 3 * time.Second

// Settle waits until d (DefaultSettle when 0; none when negative) has
// passed since the runtime was back, or ctx is done.
func Settle(ctx context.Context, back time.Time, d time.Duration) error {
	if d == 0 {
		d = DefaultSettle
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
