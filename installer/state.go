package installer

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/shimkit/shimkit/internal/installer/bundle"
	"github.com/shimkit/shimkit/internal/installer/layout"
	"github.com/shimkit/shimkit/internal/installer/runtime"
	"github.com/shimkit/shimkit/internal/installer/statefile"
)

// State is what the installer records on the node (state.json in the state
// directory): the shims it installed, and an operation that a crash
// interrupted.
type State struct {
	Shims map[string]ShimState `json:"shims,omitempty"`
	// Pending is set while an operation runs (one record per Shim it
	// changes); finding it set means the previous run died mid-way, and
	// the next run restores what it had changed, newest first, before
	// doing anything else.
	Pending Pendings `json:"pending,omitempty"`
	// CreatedDirs are directories shimkit created for config files (a
	// drop-in directory the config imports but nobody had made), node
	// paths: removed once empty after an operation, never otherwise, and
	// only these (a directory that was there before is left alone).
	CreatedDirs []string `json:"createdDirs,omitempty"`
}

// ShimState is one installed Shim: everything shimkit wrote for it, so
// that an upgrade or an uninstall touches exactly that.
type ShimState struct {
	UID      string `json:"uid,omitempty"`
	SpecHash string `json:"specHash"` // of the plan that installed it
	Digest   string `json:"digest"`   // of the fetched artifact
	// VerifiedBy names what verified the artifact's signature ("": the
	// plan asked for no verification).
	VerifiedBy string `json:"verifiedBy,omitempty"`
	// Handlers and ProxyPlugins are registered in containerd's config.
	Handlers     []string `json:"handlers,omitempty"`
	ProxyPlugins []string `json:"proxyPlugins,omitempty"`
	// Units are the sandboxer units (node paths of the unit files).
	Units []string `json:"units,omitempty"`
	// Written maps the node paths of files shimkit wrote outside the
	// Shim's own bundle directory (its units) to the digest of what it
	// wrote: a file that no longer matches was changed by someone else and
	// is neither overwritten nor deleted.
	Written map[string]string `json:"written,omitempty"`
	// BundleDir is the Shim's directory; Version the directory under it
	// that "current" points to.
	BundleDir string `json:"bundleDir,omitempty"`
	Version   string `json:"version,omitempty"`
	// Files are the node paths of the bundle's files (under the version
	// directory).
	Files []string `json:"files,omitempty"`
	// FileDigests maps each of Files to the digest ("sha256:<hex>") of
	// what the install placed there, so that a file changed since is told
	// from the one installed. Records of installers before it lack it:
	// their files are only checked to exist.
	FileDigests map[string]string `json:"fileDigests,omitempty"`

	// CurrentSince is when Version became current (zero: before records
	// kept it). Retired are the Shim's earlier versions still on the node
	// because a pod sandbox created while one was current still runs: its
	// shim may read that version's files (a VM's assets, a config); each
	// goes at the first operation that finds none.
	CurrentSince time.Time        `json:"currentSince,omitzero"`
	Retired      []RetiredVersion `json:"retired,omitempty"`

	Links       []string `json:"links,omitempty"`
	ConfigFiles []string `json:"configFiles,omitempty"`
	Preset      string   `json:"preset"`
	// Runtime is the runtime the handlers went to ("": containerd, as
	// before CRI-O).
	Runtime     string    `json:"runtime,omitempty"`
	InstalledAt time.Time `json:"installedAt"`

	// Handler and Binaries are what installers before bundles recorded:
	// one handler and its binary. Uninstall still removes them.
	Handler  string   `json:"handler,omitempty"`
	Binaries []string `json:"binaries,omitempty"`
}

// RetiredVersion is a bundle version that was current from Since (zero:
// from before records kept it) until Until.
type RetiredVersion struct {
	Version string    `json:"version"`
	Since   time.Time `json:"since,omitzero"`
	Until   time.Time `json:"until"`
}

// handlers returns the handlers the record registered, old records too.
func (s ShimState) handlers() []string {
	if len(s.Handlers) == 0 && s.Handler != "" {
		return []string{s.Handler}
	}
	return s.Handlers
}

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

// with returns ps with p added (once).
func (ps Pendings) with(p *Pending) Pendings {
	if slices.Contains(ps, p) {
		return ps
	}
	return append(ps, p)
}

// without returns ps without p (nil when empty).
func (ps Pendings) without(p *Pending) Pendings {
	out := slices.DeleteFunc(slices.Clone(ps), func(q *Pending) bool { return q == p })
	if len(out) == 0 {
		return nil
	}
	return out
}

// stateStore is the state role: the state file and the node lock in the
// state directory.
type stateStore struct{ l layout.Layout }

// store returns the Installer's state store.
func (i *Installer) store() stateStore { return stateStore{i.paths()} }

func (st stateStore) read() (*State, error) {
	s := &State{}
	if err := statefile.Read(st.l.StatePath(), s); err != nil {
		return nil, err
	}
	if s.Shims == nil {
		s.Shims = map[string]ShimState{}
	}
	return s, nil
}

func (st stateStore) write(s *State) error { return statefile.Write(st.l.StatePath(), s) }

// lock takes the node lock, waiting until ctx is done: two installers
// never edit the config or restart containerd at the same time.
func (st stateStore) lock(ctx context.Context) (func(), error) {
	return statefile.Lock(ctx, st.l.LockPath())
}

// lockShared takes the node lock shared: a reader (Verify) never sees an
// operation half-way, and readers do not wait for each other.
func (st stateStore) lockShared(ctx context.Context) (func(), error) {
	return statefile.LockShared(ctx, st.l.LockPath())
}

// recovery is the recovery role: what an operation that died left half
// done is undone by the next one, before anything else.
type recovery struct{ i *Installer }

// recoverPending undoes what an operation that died left half done: config
// backups put back, the bundle link switched back and the version it added
// removed, units and links it wrote restored or removed. It reports whether
// anything was pending, in which case the runtime must be restarted.
func (rc recovery) recoverPending(ctx context.Context, s *State) (bool, error) {
	i := rc.i
	if len(s.Pending) == 0 {
		return false, nil
	}
	var errs []error
	restored := map[string]bool{} // config files: one journal holds every change of the operation
	for k := len(s.Pending) - 1; k >= 0; k-- {
		p := s.Pending[k]
		i.log().Warn("recovering from an interrupted operation", "op", p.Op, "shim", p.Shim)
		if err := rc.recoverOne(ctx, p, restored); err != nil {
			errs = append(errs, fmt.Errorf("recover interrupted %s of %s: %w", p.Op, p.Shim, err))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return true, err
	}
	s.Pending = nil
	return true, i.store().write(s)
}

// recoverOne undoes one Shim's part of an interrupted operation.
func (rc recovery) recoverOne(ctx context.Context, p *Pending, restored map[string]bool) error {
	i := rc.i
	l := i.paths()
	errs := []error{runtime.Recover(i.runtimeOptions(), p.Runtime, p.ConfigFiles, p.Handlers, restored)}
	if p.BundleDir != "" {
		errs = append(errs, bundle.Restore(l.Local(p.BundleDir), p.PrevVersion, p.NewVersion))
	}
	for _, lk := range slices.Sorted(maps.Keys(p.Links)) {
		errs = append(errs, bundle.UnlinkOurs(l.Local(lk), p.Links[lk]))
	}
	if len(p.Units) > 0 {
		errs = append(errs, i.units().Restore(ctx, p.Units, p.Written))
	}
	return errors.Join(errs...)
}
