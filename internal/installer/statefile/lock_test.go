package statefile

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// A waiter on a lock file its holder removes does not lock the removed
// file: it takes the new one, and a later locker waits for it.
func TestLockFileRemovedByItsHolder(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state", "lock")
	ctx := context.Background()
	unlockA, err := Lock(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan func(), 1)
	go func() {
		unlock, err := Lock(ctx, path)
		if err != nil {
			t.Error(err)
		}
		got <- unlock
	}()
	time.Sleep(100 * time.Millisecond) // B waits on A's file
	if err := Remove(path); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Dir(path)); err != nil { // the empty state directory goes too
		t.Fatal(err)
	}
	unlockA()
	var unlockB func()
	select {
	case unlockB = <-got:
	case <-time.After(5 * time.Second):
		t.Fatal("B never got the lock")
	}
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("B holds no lock file at %s: %v", path, err)
	}
	short, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	if unlockC, err := Lock(short, path); !errors.Is(err, context.DeadlineExceeded) {
		if unlockC != nil {
			unlockC()
		}
		t.Fatalf("C locked while B holds the lock: %v", err)
	}
	if unlockS, err := LockShared(short, path); !errors.Is(err, context.DeadlineExceeded) {
		if unlockS != nil {
			unlockS()
		}
		t.Fatalf("a shared lock while B holds it exclusive: %v", err)
	}
	unlockB()
	unlockC, err := Lock(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	unlockC()
}

// Without a lock file a shared lock waits for nothing and creates nothing.
func TestLockSharedWithoutFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "lock")
	unlock, err := LockShared(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	unlock()
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("LockShared created %s: %v", path, err)
	}
}
