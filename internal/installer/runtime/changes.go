package runtime

import (
	"errors"
	"log/slog"
	"slices"

	"github.com/shimkit/shimkit/containerdconfig"
)

// dirCreator is a ConfigChange that created directories (a drop-in
// directory) the state records and removes once empty.
type dirCreator interface {
	CreatedDirs() []string
}

// Changes are the ConfigChanges of one edit, or of one operation, in
// order: one change.
type Changes []ConfigChange

// Changed reports whether any change changed a file.
func (cs Changes) Changed() bool {
	for _, c := range cs {
		if c.Changed() {
			return true
		}
	}
	return false
}

// Commit commits every change.
func (cs Changes) Commit() error {
	var errs []error
	for _, c := range cs {
		errs = append(errs, c.Commit())
	}
	return errors.Join(errs...)
}

// Rollback undoes the changes, newest first.
func (cs Changes) Rollback() error {
	var errs []error
	for k := len(cs) - 1; k >= 0; k-- {
		if cs[k].Changed() {
			errs = append(errs, cs[k].Rollback())
		}
	}
	return errors.Join(errs...)
}

// CreatedDirs are the directories the changes created.
func (cs Changes) CreatedDirs() []string {
	var out []string
	for _, c := range cs {
		if d, ok := c.(dirCreator); ok {
			out = append(out, d.CreatedDirs()...)
		}
	}
	return out
}

// KeepCreatedDirs returns the directories shimkit created (recorded, and
// those of created it did now), node paths under root, without those it
// removed because they are empty now (the last drop-in went); nil when
// none is left.
func KeepCreatedDirs(root string, recorded, created []string, log *slog.Logger) []string {
	for _, d := range created {
		if !slices.Contains(recorded, d) {
			recorded = append(recorded, d)
		}
	}
	recorded = slices.DeleteFunc(recorded, func(d string) bool {
		gone, err := containerdconfig.RemoveCreatedDir(root, d)
		if err != nil {
			log.Warn("removing a directory shimkit created", "dir", d, "err", err)
		}
		return gone
	})
	if len(recorded) == 0 {
		return nil
	}
	return recorded
}
