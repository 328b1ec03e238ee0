package phase

import (
	"context"
	"errors"
	"sync/atomic"
)

// State is where a reconcile is.
type State int32

const (
	// None: the context is not a reconcile's (no Start).
	None State = iota
	// Observing: the reconcile reads its snapshot and decides.
	Observing
	// Acting: the decision is complete; the reconcile writes it.
	Acting
)

func (s State) String() string {
	switch s {
	case Observing:
		return "observing"
	case Acting:
		return "acting"
	}
	return "none"
}

// Sentinel errors of Checked, matched with errors.Is.
var (
	// ErrWriteBeforeDecision: a write while the reconcile observes.
	ErrWriteBeforeDecision = errors.New("write before the decision is complete")
	// ErrReadAfterDecision: a read of the API once the reconcile acts.
	ErrReadAfterDecision = errors.New("read after the decision was made")
	// ErrEventBeforeDecision: an Event emitted while the reconcile
	// observes. An Event says what a reconcile did or found; one emitted
	// from a half-made decision may announce what the decision then does
	// not do.
	ErrEventBeforeDecision = errors.New("event before the decision is complete")
)

type key struct{}

type mark struct{ state atomic.Int32 }

// Start returns a context that marks one reconcile as observing.
func Start(ctx context.Context) context.Context {
	m := &mark{}
	m.state.Store(int32(Observing))
	return context.WithValue(ctx, key{}, m)
}

// Decided marks the reconcile of ctx as acting: its decision is complete.
// It is a no-op for a context without Start.
func Decided(ctx context.Context) {
	if m, ok := ctx.Value(key{}).(*mark); ok {
		m.state.Store(int32(Acting))
	}
}

// Of is where the reconcile of ctx is (None outside one).
func Of(ctx context.Context) State {
	if m, ok := ctx.Value(key{}).(*mark); ok {
		return State(m.state.Load())
	}
	return None
}
