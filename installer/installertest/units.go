package installertest

import (
	"context"
	"fmt"
	"sync"

	"github.com/shimkit/shimkit/installer"
)

var _ installer.UnitManager = (*FakeUnits)(nil)

// FakeUnits is an in-memory UnitManager for tests: it records which units
// run and fails the units named in Fail.
type FakeUnits struct {
	mu      sync.Mutex
	running map[string]bool
	reloads int
	Fail    map[string]bool
}

// Reload counts reloads.
func (f *FakeUnits) Reload(context.Context) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.reloads++
	return nil
}

// Restart marks the unit running, or fails it.
func (f *FakeUnits) Restart(_ context.Context, unit string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.Fail[unit] {
		return fmt.Errorf("%w: %s (fake)", installer.ErrUnitFailed, unit)
	}
	if f.running == nil {
		f.running = map[string]bool{}
	}
	f.running[unit] = true
	return nil
}

// Stop marks the unit stopped.
func (f *FakeUnits) Stop(_ context.Context, unit string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.running, unit)
	return nil
}

// Running reports whether the unit runs.
func (f *FakeUnits) Running(unit string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.running[unit]
}
