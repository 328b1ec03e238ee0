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
// and returns the unlock.
func Lock(ctx context.Context, path string) (func(), error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	return flock(ctx, f, unix.LOCK_EX)
}

// LockShared takes the node lock at path shared, waiting until ctx is
// done. It creates nothing: without a lock file there is nothing to wait
// for.
func LockShared(ctx context.Context, path string) (func(), error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return func() {}, nil
	}
	if err != nil {
		return nil, err
	}
	return flock(ctx, f, unix.LOCK_SH)
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
