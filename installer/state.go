package installer

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/sys/unix"

	"github.com/shimkit/shimkit/containerdconfig"
)

// State is what the installer records on the node (state.json in the state
// directory): the shims it installed, and an operation that a crash
// interrupted.
type State struct {
	Shims map[string]ShimState `json:"shims,omitempty"`
	// Pending is set while an operation runs; finding it set means the
	// previous run died mid-way, and the next run restores what it had
	// changed before doing anything else.
	Pending *Pending `json:"pending,omitempty"`
}

// ShimState is one installed shim.
type ShimState struct {
	Handler     string    `json:"handler"`
	RuntimeType string    `json:"runtimeType"`
	Binaries    []string  `json:"binaries"` // node paths
	Links       []string  `json:"links,omitempty"`
	Digest      string    `json:"digest"`   // of the fetched artifact
	SpecHash    string    `json:"specHash"` // of the Spec that installed it
	ConfigFiles []string  `json:"configFiles,omitempty"`
	Preset      string    `json:"preset"`
	InstalledAt time.Time `json:"installedAt"`
}

// Pending describes an operation in flight.
type Pending struct {
	Op          string   `json:"op"` // install or uninstall
	Shim        string   `json:"shim"`
	ConfigFiles []string `json:"configFiles,omitempty"` // node paths with a .shimkit-backup
	// Binaries maps a node path to its backup (empty: the binary is new).
	Binaries map[string]string `json:"binaries,omitempty"`
	Links    []string          `json:"links,omitempty"` // links created by the operation
}

func (i *Installer) statePath() string { return i.local(filepath.Join(i.stateDir(), "state.json")) }

func (i *Installer) readState() (*State, error) {
	data, err := os.ReadFile(i.statePath())
	if errors.Is(err, fs.ErrNotExist) {
		return &State{Shims: map[string]ShimState{}}, nil
	}
	if err != nil {
		return nil, err
	}
	s := &State{}
	if err := json.Unmarshal(data, s); err != nil {
		return nil, fmt.Errorf("state %s: %w", i.statePath(), err)
	}
	if s.Shims == nil {
		s.Shims = map[string]ShimState{}
	}
	return s, nil
}

func (i *Installer) writeState(s *State) error {
	data, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(i.statePath()), 0o755); err != nil {
		return err
	}
	return containerdconfig.WriteFileAtomic(i.statePath(), append(data, '\n'), 0o644)
}

// lock takes the node-wide lock (flock on a file in the state directory),
// waiting until ctx is done: two installers never edit the config or
// restart containerd at the same time.
func (i *Installer) lock(ctx context.Context) (func(), error) {
	path := i.local(filepath.Join(i.stateDir(), "lock"))
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	for {
		err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
		if err == nil {
			return func() { _ = unix.Flock(int(f.Fd()), unix.LOCK_UN); f.Close() }, nil
		}
		if !errors.Is(err, unix.EWOULDBLOCK) {
			f.Close()
			return nil, fmt.Errorf("lock %s: %w", path, err)
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, fmt.Errorf("waiting for the node lock %s: %w", path, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}
