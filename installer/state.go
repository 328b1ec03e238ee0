package installer

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"time"

	"github.com/opencontainers/go-digest"

	"github.com/shimkit/shimkit/fetch"

	"github.com/shimkit/shimkit/internal/installer/bundle"
	"github.com/shimkit/shimkit/internal/installer/layout"
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
type RetiredVersion = bundle.Window

// handlers returns the handlers the record registered, old records too.
func (s ShimState) handlers() []string {
	if len(s.Handlers) == 0 && s.Handler != "" {
		return []string{s.Handler}
	}
	return s.Handlers
}

// Pending describes an operation in flight: enough to undo it after a
// crash (statefile.Pending).
type Pending = statefile.Pending

// Pendings are the records of one operation in flight, in the order its
// Shims were changed (statefile.Pendings).
type Pendings = statefile.Pendings

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

// finish writes the state an operation ends with, under the node lock,
// and keeps no more than it records: the artifact cache keeps only the
// artifacts of the installed Shims, and once no Shim, operation or
// created directory is left, the state file, the cache and the lock file
// go, so that the node is as it was before shimkit (the state directory
// itself stays: an admin may have made it, or mounted it).
func (st stateStore) finish(s *State) error {
	if len(s.Shims) > 0 || len(s.Pending) > 0 || len(s.CreatedDirs) > 0 {
		if err := st.write(s); err != nil {
			return err
		}
		return st.pruneCache(s)
	}
	if err := os.RemoveAll(st.l.CachePath()); err != nil {
		return fmt.Errorf("removing the artifact cache: %w", err)
	}
	if err := os.Remove(st.l.StatePath()); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return statefile.Remove(st.l.LockPath())
}

// pruneCache removes the cached artifacts no record of s names.
func (st stateStore) pruneCache(s *State) error {
	if _, err := os.Stat(st.l.CachePath()); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	cache, err := fetch.NewCache(st.l.CachePath())
	if err != nil {
		return err
	}
	var keep []digest.Digest
	for _, rec := range s.Shims {
		if rec.Digest != "" {
			keep = append(keep, digest.Digest(rec.Digest))
		}
	}
	_, err = cache.Prune(keep...)
	return err
}

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

// recoverPending undoes what an operation that died left half done
// (statefile.Undo). It reports whether anything was pending, in
// which case the runtime must be restarted.
func (rc recovery) recoverPending(ctx context.Context, s *State) (bool, error) {
	i := rc.i
	if len(s.Pending) == 0 {
		return false, nil
	}
	if err := statefile.Undo(ctx, s.Pending, i.paths(), i.runtimeOptions(), i.units(), i.log()); err != nil {
		return true, err
	}
	s.Pending = nil
	return true, i.store().write(s)
}
