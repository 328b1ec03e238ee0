package plancheck

import (
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// The most files and packages a reconcile's walk may enter (issue #56's
// target). The walk counts calls of the module's functions that pass a
// context, a call of an interface method entering every implementation
// the module has (the snapshot's sources, the Resolver); the client and
// the recorder have none. Measured so: 293 calls in 39 files across 12
// packages, once observe read through interfaces and package resolve
// joined pin, joblog results. Not following interfaces, it was 138 calls
// in 32 files across 12 packages at 1807d95 (139, 32 and 12 at 9747ff6).
const maxWalkFiles, maxWalkPackages = 50, 12

// TestReconcileWalk measures the walk of a reconcile's context from
// Reconciler.Reconcile (the call sites, files and packages it enters) and
// fails when it grows past maxWalkFiles or maxWalkPackages: a newcomer
// follows it to learn the reconcile. SHIMKIT_WALK=v lists the files.
func TestReconcileWalk(t *testing.T) {
	if testing.Short() {
		t.Skip("type-checks the module from source")
	}
	wd, _ := os.Getwd()
	prog, err := LoadModule(wd+"/../..", "./operator")
	if err != nil {
		t.Fatal(err)
	}
	root, err := prog.Method(Module+"/operator", "Reconciler", "Reconcile")
	if err != nil {
		t.Fatal(err)
	}
	w := prog.WalkContext(root)
	t.Logf("from Reconciler.Reconcile, the context enters %d calls in %d files across %d packages", w.Calls, len(w.Files), len(w.Packages))
	if os.Getenv("SHIMKIT_WALK") == "v" {
		var files []string
		for f := range w.Files {
			rel, _ := filepath.Rel(wd+"/../..", f)
			files = append(files, rel)
		}
		sort.Strings(files)
		t.Log(strings.Join(files, "\n"))
	}
	if len(w.Files) > maxWalkFiles || len(w.Packages) > maxWalkPackages {
		t.Errorf("the walk enters %d files in %d packages, at most %d in %d", len(w.Files), len(w.Packages), maxWalkFiles, maxWalkPackages)
	}
	if w.Calls == 0 || !w.Packages[Module+"/internal/operator/status"] {
		t.Errorf("the walk found %d calls and no status writer: it follows nothing", w.Calls)
	}
}
