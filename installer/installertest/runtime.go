package installertest

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"

	"github.com/shimkit/shimkit/containerdconfig"
	"github.com/shimkit/shimkit/installer"
)

// FakeRuntime is an in-memory Runtime for tests of the steps and of code
// that drives an Installer: its config is a map of handlers, a restart
// makes the config the one the runtime serves, and Check compares with
// what it serves. It keeps what matters to a caller: a change committed
// or rolled back, a restart that fails (FailRestart), a handler the
// runtime drops at restart (Drop, as CRI-O does with one it cannot use),
// and a config edit refused (FailConfigure).
//
// It is not a runtime: no files, no CRI, no crash recovery. The
// containerd and CRI-O runtimes' own tests prove those on disk and with
// the real daemons.
type FakeRuntime struct {
	// FailRestart, when set, is returned by Restart, which then serves
	// nothing (the runtime did not come back).
	FailRestart error
	// FailConfigure, when set, is returned by Configure, which writes
	// nothing.
	FailConfigure error
	// Drop are handlers the runtime leaves out when it restarts.
	Drop map[string]bool

	mu       sync.Mutex
	config   map[string]containerdconfig.RuntimeHandler
	serving  map[string]bool
	down     bool
	restarts int
}

var _ installer.Runtime = (*FakeRuntime)(nil)

// ErrFakeNotReady: the fake runtime did not come back from its restart.
var ErrFakeNotReady = errors.New("fake runtime is not ready")

// Configure applies the edit to the config map, as one change.
func (f *FakeRuntime) Configure(_ context.Context, e installer.ConfigEdit) (installer.ConfigChange, error) {
	if f.FailConfigure != nil {
		return nil, f.FailConfigure
	}
	var names []string
	for _, h := range e.Handlers {
		names = append(names, h.Name)
	}
	if e.Journal != nil {
		if err := e.Journal(nil, append(names, e.Remove...)); err != nil {
			return nil, err
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	before := maps.Clone(f.config)
	next := maps.Clone(f.config)
	if next == nil {
		next = map[string]containerdconfig.RuntimeHandler{}
	}
	for _, h := range e.Handlers {
		next[h.Name] = h
	}
	for _, name := range e.Remove {
		delete(next, name)
	}
	f.config = next
	return &fakeChange{f: f, before: before, changed: !sameHandlers(before, next)}, nil
}

// Restart makes the config the served handlers, or fails.
func (f *FakeRuntime) Restart(context.Context) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.restarts++
	if f.FailRestart != nil {
		f.down = true
		return f.FailRestart
	}
	f.down = false
	f.serving = map[string]bool{}
	for name := range f.config {
		if !f.Drop[name] {
			f.serving[name] = true
		}
	}
	return nil
}

// Check compares with what the runtime serves.
func (f *FakeRuntime) Check(_ context.Context, handler string, present bool) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	switch {
	case f.down:
		return fmt.Errorf("%w: %w", installer.ErrUnhealthy, ErrFakeNotReady)
	case handler != "" && f.serving[handler] != present:
		return fmt.Errorf("%w: handler %s present=%v, want %v (fake)", installer.ErrUnhealthy, handler, f.serving[handler], present)
	}
	return nil
}

// HasHandler reports whether the config has the handler (an Installer
// asks a runtime that has it before it adopts or drops a handler).
func (f *FakeRuntime) HasHandler(name string) (bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	_, ok := f.config[name]
	return ok, nil
}

// Handlers returns the config's handlers, sorted.
func (f *FakeRuntime) Handlers() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Sorted(maps.Keys(f.config))
}

// Restarts counts the restarts.
func (f *FakeRuntime) Restarts() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.restarts
}

// fakeChange is a FakeRuntime's pending config edit.
type fakeChange struct {
	f       *FakeRuntime
	before  map[string]containerdconfig.RuntimeHandler
	changed bool
}

func (c *fakeChange) Changed() bool { return c.changed }
func (c *fakeChange) Commit() error { return nil }

func (c *fakeChange) Rollback() error {
	c.f.mu.Lock()
	defer c.f.mu.Unlock()
	c.f.config = c.before
	return nil
}

func sameHandlers(a, b map[string]containerdconfig.RuntimeHandler) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		w, ok := b[k]
		if !ok || fmt.Sprint(v) != fmt.Sprint(w) {
			return false
		}
	}
	return true
}
