package crioconfig

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"sync"
	"testing"
)

var _ HandlerWriter = (*Fake)(nil)

// Fake is an in-memory HandlerWriter for this package's tests of code
// that consumes the role. It keeps the Writer's decisions that
// matter to a caller: Validate, a missing or non-executable binary
// (Binaries), a handler someone else defines (Foreign) or that is the
// default runtime (crun), another owner's handler, no change when
// identical, and Rollback restoring the state before the Change.
//
// It is not the Writer: there are no files, no TOML, no journal, no crash
// recovery, no ErrNotOurs for a drop-in edited by hand, and Restore does
// not see it. The Writer's own tests prove those on disk and with CRI-O.
type Fake struct {
	Owner string
	// Binaries are the executable paths that exist; nil means every path.
	Binaries map[string]bool
	// Foreign maps a handler name to the file of someone else that
	// defines it.
	Foreign map[string]string

	mu       sync.Mutex
	handlers map[string]fakeEntry
}

type fakeEntry struct {
	owner string
	h     RuntimeHandler
}

// NewFake returns an empty Fake writing for owner.
func NewFake(owner string) *Fake { return &Fake{Owner: owner} }

// Handlers returns the handlers the Fake holds now, by name.
func (f *Fake) Handlers() map[string]RuntimeHandler {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := map[string]RuntimeHandler{}
	for n, e := range f.handlers {
		out[n] = e.h
	}
	return out
}

// Install records h with the Writer's refusals.
func (f *Fake) Install(ctx context.Context, h RuntimeHandler) (*Change, error) {
	h = h.withDefaults()
	if err := h.Validate(); err != nil {
		return nil, err
	}
	if f.Binaries != nil && !f.Binaries[h.RuntimePath] {
		return nil, fileErr(h.RuntimePath, ErrBinary, "runtime_path of handler %q does not exist (fake)", h.Name)
	}
	if h.Name == builtinRuntime {
		return nil, fmt.Errorf("%w: %q is CRI-O's built-in handler (fake)", ErrReserved, h.Name)
	}
	if file, ok := f.Foreign[h.Name]; ok {
		return nil, fileErr(file, ErrForeignHandler, "defines the runtime handler %q (fake)", h.Name)
	}
	return f.edit(h.Name, func(cur fakeEntry, ok bool) (fakeEntry, bool, error) {
		if ok && cur.owner != f.Owner {
			return cur, false, fileErr(DropInName(h.Name), ErrNotOurs, "written for %s, not %s (fake)", cur.owner, f.Owner)
		}
		next := fakeEntry{owner: f.Owner, h: h}
		return next, !ok || string(Render(cur.owner, cur.h)) != string(Render(next.owner, next.h)), nil
	})
}

// Uninstall removes the owner's handler.
func (f *Fake) Uninstall(ctx context.Context, name string) (*Change, error) {
	if err := validName(name); err != nil {
		return nil, err
	}
	return f.edit(name, func(cur fakeEntry, ok bool) (fakeEntry, bool, error) {
		if ok && cur.owner != f.Owner {
			return cur, false, fileErr(DropInName(name), ErrNotOurs, "written for %s, not %s (fake)", cur.owner, f.Owner)
		}
		return fakeEntry{}, ok, nil
	})
}

// edit applies fn to the handler's entry; a zero result entry removes it.
func (f *Fake) edit(name string, fn func(fakeEntry, bool) (fakeEntry, bool, error)) (*Change, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	cur, ok := f.handlers[name]
	next, changed, err := fn(cur, ok)
	if err != nil {
		return nil, err
	}
	if !changed {
		return &Change{}, nil
	}
	before := maps.Clone(f.handlers)
	if f.handlers == nil {
		f.handlers = map[string]fakeEntry{}
	}
	if next.owner == "" {
		delete(f.handlers, name)
	} else {
		f.handlers[name] = next
	}
	return &Change{
		files:  []string{DropInName(name)},
		commit: func() error { return nil },
		rollback: func() error {
			f.mu.Lock()
			defer f.mu.Unlock()
			f.handlers = before
			return nil
		},
	}, nil
}

// TestFake drives the double through the refusals it keeps, the way a
// consumer's unit test would.
func TestFake(t *testing.T) {
	ctx := context.Background()
	f := NewFake("shim/a")
	f.Binaries = map[string]bool{"/usr/local/bin/crun": true, "/opt/kata/bin/containerd-shim-kata-v2": true}
	f.Foreign = map[string]string{"runc": "/etc/crio/crio.conf.d/10-runc.conf"}

	for _, c := range []struct {
		h    RuntimeHandler
		want error
	}{
		{with(crunHandler, func(h *RuntimeHandler) { h.RuntimePath = "/nope" }), ErrBinary},
		{with(crunHandler, func(h *RuntimeHandler) { h.Name = "runc" }), ErrForeignHandler},
		{with(crunHandler, func(h *RuntimeHandler) { h.Name = "crun" }), ErrReserved},
		{with(kataHandler, func(h *RuntimeHandler) { h.RuntimePath = "/opt/kata/bin/kata" }), ErrInvalidHandler},
	} {
		if _, err := f.Install(ctx, c.h); !errors.Is(err, c.want) {
			t.Errorf("Install(%s) = %v, want %v", c.h.Name, err, c.want)
		}
	}
	if len(f.Handlers()) != 0 {
		t.Fatalf("refusals wrote %v", f.Handlers())
	}
	c, err := f.Install(ctx, crunHandler)
	if err != nil || !c.Changed() {
		t.Fatalf("Install: %v", err)
	}
	_ = c.Commit()
	if c, err := f.Install(ctx, crunHandler); err != nil || c.Changed() {
		t.Fatalf("identical Install changed: %v", err)
	}
	c, err = f.Install(ctx, kataHandler)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Rollback(); err != nil {
		t.Fatal(err)
	}
	if _, ok := f.Handlers()["kata"]; ok {
		t.Error("Rollback kept kata")
	}
	other := NewFake("shim/b")
	other.handlers = f.handlers
	if _, err := other.Uninstall(ctx, "crun-wasm"); !errors.Is(err, ErrNotOurs) {
		t.Errorf("another owner's Uninstall = %v", err)
	}
	c, err = f.Uninstall(ctx, "crun-wasm")
	if err != nil || !c.Changed() {
		t.Fatalf("Uninstall: %v", err)
	}
	if len(f.Handlers()) != 0 {
		t.Errorf("left %v", f.Handlers())
	}
}
