package drift

import (
	"fmt"

	"github.com/shimkit/shimkit/installer/plan"
	"github.com/shimkit/shimkit/internal/installer/bundle"
	"github.com/shimkit/shimkit/internal/installer/layout"
	"github.com/shimkit/shimkit/internal/installer/runtime"
	"github.com/shimkit/shimkit/internal/installer/units"
)

// Record is what a Shim's record says, as far as drift goes.
type Record struct {
	// SpecHash, Digest and UID are the spec, the artifact and the Shim it
	// was installed from.
	SpecHash, Digest, UID string
	Bundle                bundle.Record
	// Handlers are registered in the runtime's config.
	Handlers []string
	// Units are the unit files (node paths); Written the digest of each
	// as written.
	Units   []string
	Written map[string]string
}

// OfRecord compares the record with the plan: the spec it was installed
// from, the artifact and the Shim's UID.
func OfRecord(rec Record, p *plan.NodePlan) []string {
	var out []string
	if rec.SpecHash != p.SpecHash {
		out = append(out, fmt.Sprintf("installed spec %s, the plan's is %s", rec.SpecHash, p.SpecHash))
	}
	if a := p.Artifact; a != nil && a.Digest != "" && rec.Digest != a.Digest {
		out = append(out, fmt.Sprintf("installed digest %s, the plan pins %s", rec.Digest, a.Digest))
	}
	if rec.UID != "" && p.Shim.UID != "" && rec.UID != p.Shim.UID {
		out = append(out, fmt.Sprintf("installed for Shim UID %s, the plan's is %s", rec.UID, p.Shim.UID))
	}
	return out
}

// Files returns the plan's files when they are the installed bundle's
// layout (the same artifact and files, so the same modes), else nil.
func Files(rec Record, p *plan.NodePlan) []plan.File {
	if bundle.SameVersion(rec.Bundle.Version, bundle.Version(rec.Digest, p.Files)) {
		return p.Files
	}
	return nil
}

// Node compares the node with the record: its bundle (files of the
// plan's layout, or nil), then what lies outside it (Setup).
func Node(l layout.Layout, rt *runtime.Node, u units.Units, rec Record, files []plan.File) ([]string, error) {
	out, err := bundle.Drift(l, rec.Bundle, files)
	if err != nil {
		return out, err
	}
	rest, err := Setup(rt, u, rec)
	return append(out, rest...), err
}

// Setup compares what of a Shim's record lies outside its bundle: its
// handlers in the runtime's config, then its units.
func Setup(rt *runtime.Node, u units.Units, rec Record) ([]string, error) {
	out, err := rt.HandlerDrift(rec.Handlers)
	if err != nil {
		return out, err
	}
	found, err := u.Drift(rec.Units, rec.Written)
	return append(out, found...), err
}
