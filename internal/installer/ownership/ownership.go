package ownership

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"

	"github.com/opencontainers/go-digest"

	"github.com/shimkit/shimkit/internal/installer/layout"
)

// ErrConflict: something the plan would write exists and shimkit did not
// write it for this Shim (a handler, unit, proxy plugin or PATH name of an
// admin, another tool or another Shim), or it was changed after shimkit
// wrote it. Nothing on the node was changed.
var ErrConflict = errors.New("belongs to someone else")

// ErrConcurrentEdit: undoing an operation found a file that someone else
// changed after shimkit wrote it; the file was left as it is, so that their
// edit is not lost.
var ErrConcurrentEdit = errors.New("changed by someone else after shimkit wrote it")

// ErrReserved: the plan asks for a name that belongs to containerd
// itself (its runc shim).
var ErrReserved = errors.New("reserved for containerd's own runtime")

// Claims are the names one Shim's record holds.
type Claims struct {
	Handlers, ProxyPlugins, Units []string
}

// CheckOthers refuses a handler, proxy plugin or unit (node path) that
// another Shim's record claims; others maps each other Shim to its
// claims.
func CheckOthers(others map[string]Claims, want Claims) error {
	var errs []error
	for _, other := range slices.Sorted(maps.Keys(others)) {
		rec := others[other]
		for _, h := range want.Handlers {
			if slices.Contains(rec.Handlers, h) {
				errs = append(errs, fmt.Errorf("%w: handler %q is Shim %s's", ErrConflict, h, other))
			}
		}
		for _, p := range want.ProxyPlugins {
			if slices.Contains(rec.ProxyPlugins, p) {
				errs = append(errs, fmt.Errorf("%w: proxy plugin %q is Shim %s's", ErrConflict, p, other))
			}
		}
		for _, u := range want.Units {
			if slices.Contains(rec.Units, u) {
				errs = append(errs, fmt.Errorf("%w: unit %s is Shim %s's", ErrConflict, u, other))
			}
		}
	}
	return errors.Join(errs...)
}

// CheckUnitsOurs refuses unit files at paths (node paths) that shimkit did
// not write for this Shim (ours: the units its record lists), or that
// changed since it did (written: their digests when written).
func CheckUnitsOurs(l layout.Layout, paths, ours []string, written map[string]string) error {
	var errs []error
	for _, p := range paths {
		cur, err := os.ReadFile(l.Local(p))
		switch {
		case errors.Is(err, os.ErrNotExist):
			continue
		case err != nil:
			errs = append(errs, err)
		case !slices.Contains(ours, p):
			errs = append(errs, fmt.Errorf("%w: unit file %s exists and shimkit did not write it", ErrConflict, p))
		case written[p] != "" && written[p] != Digest(cur):
			errs = append(errs, fmt.Errorf("%w: unit file %s was changed after shimkit wrote it", ErrConflict, p))
		}
	}
	return errors.Join(errs...)
}

// Digest is how the state records what shimkit wrote.
func Digest(data []byte) string {
	sum := sha256.Sum256(data)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// FileDigest is Digest of a file's content, read as a stream.
func FileDigest(local string) (string, error) {
	f, err := os.Open(local)
	if err != nil {
		return "", err
	}
	defer f.Close()
	d, err := digest.SHA256.FromReader(f)
	return d.String(), err
}
