package crioconfig

import (
	"context"
	"errors"
	"testing"
)

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
