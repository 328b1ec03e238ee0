package statefile

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"

	"github.com/shimkit/shimkit/internal/installer/bundle"
	"github.com/shimkit/shimkit/internal/installer/layout"
	"github.com/shimkit/shimkit/internal/installer/runtime"
	"github.com/shimkit/shimkit/internal/installer/units"
)

// Pending describes an operation in flight: enough to undo it after a
// crash.
type Pending struct {
	Op          string   `json:"op"` // install or uninstall
	Shim        string   `json:"shim"`
	ConfigFiles []string `json:"configFiles,omitempty"` // node paths that may have a .shimkit-journal
	// Runtime is the runtime whose config the operation edits ("":
	// containerd); Handlers, on CRI-O, the handlers whose journals it may
	// have left.
	Runtime  string   `json:"runtime,omitempty"`
	Handlers []string `json:"handlers,omitempty"`
	// BundleDir is the Shim's bundle directory; PrevVersion what "current"
	// pointed to before ("" when nothing); NewVersion the version the
	// operation may have created.
	BundleDir   string `json:"bundleDir,omitempty"`
	PrevVersion string `json:"prevVersion,omitempty"`
	NewVersion  string `json:"newVersion,omitempty"`
	// Units lists the unit files the operation may write; a backup sits
	// next to those it replaces.
	Units []string `json:"units,omitempty"`
	// Written maps those unit files to the digest of what the operation
	// writes: recovery restores or removes only a file that still holds it.
	Written map[string]string `json:"written,omitempty"`
	// Links maps the PATH links the operation may create to their target.
	Links map[string]string `json:"links,omitempty"`
}

// Pendings are the records of one operation in flight, in the order its
// Shims were changed. One record is written as a JSON object, as
// installers before combined operations wrote (and read) it; several as
// an array.
type Pendings []*Pending

// MarshalJSON writes one record as an object, several as an array.
func (ps Pendings) MarshalJSON() ([]byte, error) {
	if len(ps) == 1 {
		return json.Marshal(ps[0])
	}
	return json.Marshal([]*Pending(ps))
}

// UnmarshalJSON reads an object (one record) or an array.
func (ps *Pendings) UnmarshalJSON(data []byte) error {
	data = bytes.TrimSpace(data)
	if len(data) > 0 && data[0] == '{' {
		p := &Pending{}
		if err := json.Unmarshal(data, p); err != nil {
			return err
		}
		*ps = Pendings{p}
		return nil
	}
	return json.Unmarshal(data, (*[]*Pending)(ps))
}

// With returns ps with p added (once).
func (ps Pendings) With(p *Pending) Pendings {
	if slices.Contains(ps, p) {
		return ps
	}
	return append(ps, p)
}

// Without returns ps without p (nil when empty).
func (ps Pendings) Without(p *Pending) Pendings {
	out := slices.DeleteFunc(slices.Clone(ps), func(q *Pending) bool { return q == p })
	if len(out) == 0 {
		return nil
	}
	return out
}

// Undo undoes what an operation that died left half done (ps), newest
// record first: config backups put back, the bundle link switched back and
// the version it added removed, units and links it wrote restored or
// removed. A function, not a method: installer.Pendings exports the type,
// and its parameters are the installer's own.
func Undo(ctx context.Context, ps Pendings, l layout.Layout, rt runtime.Options, u units.Units, log *slog.Logger) error {
	var errs []error
	restored := map[string]bool{} // config files: one journal holds every change of the operation
	for k := len(ps) - 1; k >= 0; k-- {
		p := ps[k]
		log.Warn("recovering from an interrupted operation", "op", p.Op, "shim", p.Shim)
		if err := p.undo(ctx, l, rt, u, restored); err != nil {
			errs = append(errs, fmt.Errorf("recover interrupted %s of %s: %w", p.Op, p.Shim, err))
		}
	}
	return errors.Join(errs...)
}

// undo undoes one Shim's part of an interrupted operation.
func (p *Pending) undo(ctx context.Context, l layout.Layout, rt runtime.Options, u units.Units, restored map[string]bool) error {
	errs := []error{runtime.Recover(rt, p.Runtime, p.ConfigFiles, p.Handlers, restored)}
	if p.BundleDir != "" {
		errs = append(errs, bundle.Restore(l.Local(p.BundleDir), p.PrevVersion, p.NewVersion))
	}
	for _, lk := range slices.Sorted(maps.Keys(p.Links)) {
		errs = append(errs, bundle.UnlinkOurs(l.Local(lk), p.Links[lk]))
	}
	if len(p.Units) > 0 {
		errs = append(errs, u.Restore(ctx, p.Units, p.Written))
	}
	return errors.Join(errs...)
}
