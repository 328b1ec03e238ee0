package crioconfig

import (
	"bytes"
	"encoding/binary"
	"slices"
	"testing"

	"golang.org/x/sys/unix"
)

// watchNames records the name of every file created in or moved into dir
// (inotify IN_CREATE, IN_MOVED_TO; identical consecutive events are merged) until the returned function is called,
// which returns them in order. It proves that no file of shimkit's other
// than its drop-ins ever appears there, not even for a moment.
func watchNames(t testing.TB, dir string) func() []string {
	t.Helper()
	fd, err := unix.InotifyInit1(unix.IN_CLOEXEC | unix.IN_NONBLOCK)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := unix.InotifyAddWatch(fd, dir, unix.IN_CREATE|unix.IN_MOVED_TO); err != nil {
		unix.Close(fd)
		t.Fatal(err)
	}
	return func() []string {
		defer unix.Close(fd)
		var names []string
		buf := make([]byte, 64*1024)
		for {
			n, err := unix.Read(fd, buf)
			if err == unix.EAGAIN || n <= 0 {
				return names
			}
			if err != nil {
				t.Fatal(err)
			}
			for off := 0; off+unix.SizeofInotifyEvent <= n; {
				var ev unix.InotifyEvent
				_ = binary.Read(bytes.NewReader(buf[off:off+unix.SizeofInotifyEvent]), binary.NativeEndian, &ev)
				name := buf[off+unix.SizeofInotifyEvent : off+unix.SizeofInotifyEvent+int(ev.Len)]
				names = append(names, string(bytes.TrimRight(name, "\x00")))
				off += unix.SizeofInotifyEvent + int(ev.Len)
			}
		}
	}
}

// onlyDropIns fails the test when a name is not one of shimkit's drop-ins.
func onlyDropIns(t testing.TB, names []string, handlers ...string) {
	t.Helper()
	for _, n := range names {
		if !slices.ContainsFunc(handlers, func(h string) bool { return n == DropInName(h) }) {
			t.Errorf("%q appeared in the drop-in directory (all names: %v)", n, names)
		}
	}
}
