package bundle

import (
	"slices"
	"time"
)

// Window is a bundle version that was current from Since (zero: from
// before records kept it) until Until.
type Window struct {
	Version string    `json:"version"`
	Since   time.Time `json:"since,omitzero"`
	Until   time.Time `json:"until"`
}

// Retire decides, as an install of version commits, when the current
// version became current and which earlier versions stay. now is when the
// install switched the bundle to version (the sandboxes created since,
// its canary's among them, run it), or the commit's time when it did not
// switch. The version it switched away from (prev, current since
// prevSince; "" when none) joins the retired ones, and a retired version
// stays while one of the running sandboxes (created: when each of the
// Shim's ready sandboxes was created) was created while it was current.
// A nil running keeps none (nothing runs: an offline root filesystem); a
// running that fails keeps them all, and its error is returned.
func Retire(prev, version string, prevSince, now time.Time, retired []Window, running func() ([]time.Time, error)) (since time.Time, kept []Window, err error) {
	since, all := prevSince, slices.Clone(retired)
	switch {
	case prev == "":
		since = now
	case prev != version:
		all = append(all, Window{Version: prev, Since: prevSince, Until: now})
		since = now
	}
	all = slices.DeleteFunc(all, func(w Window) bool { return w.Version == version })
	if len(all) == 0 || running == nil {
		return since, nil, nil
	}
	created, err := running()
	if err != nil {
		return since, all, err
	}
	for _, w := range all {
		if slices.ContainsFunc(created, func(c time.Time) bool { return !c.Before(w.Since) && c.Before(w.Until) }) {
			kept = append(kept, w)
		}
	}
	return since, kept, nil
}
