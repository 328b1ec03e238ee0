package cli

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/shimkit/shimkit/internal/mountinfo"
)

// The two commands of the image copy, where the node cannot mount a
// Shim's image as a volume: the installer's Job runs copy-self in an init
// container of the installer's image, putting this static binary into an
// emptyDir, then copy-image from that emptyDir in an init container of the
// Shim's image (which may be FROM scratch), copying the image's files into
// a second emptyDir that the installer reads as it would the volume.
//
//	shimkit-installer copy-self  FILE
//	shimkit-installer copy-image DIR

// copyCommand runs copy-self FILE or copy-image DIR.
func copyCommand(cmd string, args []string, stderr io.Writer) int {
	if len(args) != 1 || !filepath.IsAbs(args[0]) {
		fmt.Fprintf(stderr, "shimkit-installer %s: want one absolute path, got %q\n", cmd, args)
		return ExitUsage
	}
	copyFn := copySelf
	if cmd == "copy-image" {
		copyFn = func(dir string) error { return copyImage("/", dir, "/proc/self/mountinfo") }
	}
	if err := copyFn(args[0]); err != nil {
		fmt.Fprintf(stderr, "shimkit-installer %s %s: %v\n", cmd, args[0], err)
		return ExitFailed
	}
	return ExitOK
}

// copySelf copies the running executable to file.
func copySelf(file string) error {
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	return copyFile(exe, file, 0o755)
}

// copyImage copies the container's root filesystem into dir: its regular
// files, directories and symbolic links, leaving out every mount point
// below / (what the runtime and the kubelet mount into any container:
// /proc, /dev, /etc/hosts, the service account token, the emptyDirs) so
// that only the image's own files are copied.
func copyImage(root, dir, mountinfoPath string) error {
	points, err := mountinfo.Points(mountinfoPath)
	if err != nil {
		return err
	}
	skip := map[string]bool{filepath.Clean(dir): true}
	for _, p := range points {
		skip[filepath.Clean(p)] = true
	}
	return filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p != root && skip[p] {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		rel, err := filepath.Rel(root, p)
		if err != nil || rel == "." {
			return err
		}
		to := filepath.Join(dir, rel)
		switch t := d.Type(); {
		case t.IsDir():
			return os.MkdirAll(to, 0o755)
		case t&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			return os.Symlink(target, to)
		case t.IsRegular():
			info, err := d.Info()
			if err != nil {
				return err
			}
			return copyFile(p, to, info.Mode().Perm())
		}
		return nil // devices, sockets, pipes: never part of a bundle
	})
}

func copyFile(from, to string, mode fs.FileMode) error {
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_CREATE|os.O_EXCL|os.O_WRONLY, mode)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		return errors.Join(err, out.Close())
	}
	return out.Close()
}
