package statefile

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

// Read decodes the JSON file at path into v; a file that is not there
// leaves v as it is.
func Read(path string, v any) error {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if err := json.Unmarshal(data, v); err != nil {
		return fmt.Errorf("state %s: %w", path, err)
	}
	return nil
}

// Write replaces the file at path with v as indented JSON, making its
// directory.
func Write(path string, v any) error {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return containerdconfig.WriteFileAtomic(path, append(data, '\n'), 0o644)
}

// Lock takes the node lock at path exclusive, waiting until ctx is done,
// and returns the unlock. The lock file may be removed by its holder
// (Remove, when the node has nothing of shimkit left): a lock taken on a
// file that is no longer at path is let go and taken again on the new one.
func Lock(ctx context.Context, path string) (func(), error) {
	for {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return nil, err
		}
		f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
		if errors.Is(err, fs.ErrNotExist) {
			continue // its directory went between the two calls
		}
		if err != nil {
			return nil, err
		}
		unlock, err := flock(ctx, f, unix.LOCK_EX)
		if err != nil || stillAt(f, path) {
			return unlock, err
		}
		unlock()
	}
}

// LockShared takes the node lock at path shared, waiting until ctx is
// done. It creates nothing: without a lock file there is nothing to wait
// for.
func LockShared(ctx context.Context, path string) (func(), error) {
	for {
		f, err := os.Open(path)
		if errors.Is(err, fs.ErrNotExist) {
			return func() {}, nil
		}
		if err != nil {
			return nil, err
		}
		unlock, err := flock(ctx, f, unix.LOCK_SH)
		if err != nil || stillAt(f, path) {
			return unlock, err
		}
		unlock()
	}
}

// Remove removes the lock file at path, which the caller holds
// exclusive: a waiter on it then finds it gone and locks a new one.
func Remove(path string) error {
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

// stillAt reports whether the open file f is the one at path.
func stillAt(f *os.File, path string) bool {
	var open, named unix.Stat_t
	if unix.Fstat(int(f.Fd()), &open) != nil || unix.Stat(path, &named) != nil {
		return false
	}
	return open.Dev == named.Dev && open.Ino == named.Ino
}

// flock locks f (how: LOCK_EX or LOCK_SH), waiting until ctx is done, and
// returns the unlock, which closes f; f is closed on an error too.
func flock(ctx context.Context, f *os.File, how int) (func(), error) {
	for {
		err := unix.Flock(int(f.Fd()), how|unix.LOCK_NB)
		if err == nil {
			return func() { _ = unix.Flock(int(f.Fd()), unix.LOCK_UN); f.Close() }, nil
		}
		if !errors.Is(err, unix.EWOULDBLOCK) {
			f.Close()
			return nil, fmt.Errorf("lock %s: %w", f.Name(), err)
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, fmt.Errorf("waiting for the node lock %s: %w", f.Name(), ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}
