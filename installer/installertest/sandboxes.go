package installertest

import (
	"context"
	"slices"
	"sync"

	"github.com/shimkit/shimkit/installer"
	"github.com/shimkit/shimkit/installer/plan"
)

var _ installer.SandboxLister = (*FakeSandboxes)(nil)

// FakeSandboxes is an in-memory SandboxLister for tests: the pod sandboxes
// it lists are those Set last (Fail, when set, is returned instead).
//
// It is not a runtime: nothing runs, and a sandbox's handler need not
// exist. The installer's tests on real containerd list real sandboxes
// over CRI (CRISandboxes).
type FakeSandboxes struct {
	mu   sync.Mutex
	list []plan.Sandbox
	Fail error
}

// Set replaces the sandboxes listed.
func (f *FakeSandboxes) Set(sbs ...plan.Sandbox) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.list = slices.Clone(sbs)
}

// Sandboxes lists them.
func (f *FakeSandboxes) Sandboxes(context.Context) ([]plan.Sandbox, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.Fail != nil {
		return nil, f.Fail
	}
	return slices.Clone(f.list), nil
}
