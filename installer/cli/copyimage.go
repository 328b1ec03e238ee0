package cli

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
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
func copyImage(root, dir, mountinfo string) error {
	skip, err := mountPoints(mountinfo)
	if err != nil {
		return err
	}
	skip[filepath.Clean(dir)] = true
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

// mountPoints reads the mount points of a mountinfo file
// (/proc/self/mountinfo).
func mountPoints(mountinfo string) (map[string]bool, error) {
	f, err := os.Open(mountinfo)
	if err != nil {
		return nil, fmt.Errorf("mount points: %w", err)
	}
	defer f.Close()
	points := map[string]bool{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// ID parent major:minor root mountpoint options ...
		fields := strings.Fields(sc.Text())
		if len(fields) < 5 {
			continue
		}
		points[filepath.Clean(unescapeMount(fields[4]))] = true
	}
	return points, sc.Err()
}

// unescapeMount undoes mountinfo's octal escapes (\040 for a space).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+4 <= len(s) {
			var c byte
			if _, err := fmt.Sscanf(s[i+1:i+4], "%03o", &c); err == nil {
				b.WriteByte(c)
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
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
