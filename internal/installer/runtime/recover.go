package runtime

import (
	"errors"

	"github.com/shimkit/shimkit/containerdconfig"
	"github.com/shimkit/shimkit/crioconfig"
	"github.com/shimkit/shimkit/installer/plan"
)

// Recover puts back the runtime's config files of an interrupted edit
// (kind as the state records it): CRI-O's from the handlers' journals in
// its state directory; containerd's from their journals next to them
// (files, node paths), each once: one journal holds every change of the
// operation, and restored records the files done. A file someone changed
// since is left as it is (the error wraps the config package's
// ErrConcurrentEdit) and its journal dropped.
func Recover(o Options, kind string, files, handlers []string, restored map[string]bool) error {
	var errs []error
	if kind == plan.RuntimeCRIO {
		t := CRIOTarget(o.Layout, o.CRIO)
		for _, h := range handlers {
			_, err := crioconfig.Restore(t, h)
			errs = append(errs, settleCRIO(t, o.Log, h, err))
		}
		return errors.Join(errs...)
	}
	t := containerdconfig.Target{Root: o.Layout.Root()}
	for _, f := range files {
		if restored[f] {
			continue
		}
		restored[f] = true
		_, err := containerdconfig.Restore(o.Layout.Local(f))
		errs = append(errs, settleConcurrent(t, o.Log, []string{f}, err))
	}
	return errors.Join(errs...)
}
