package e2e

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/shimkit/shimkit/internal/testutil"
	"github.com/shimkit/shimkit/internal/testutil/mdrun"
)

// tutorialPage is the page the release scenario follows verbatim.
const tutorialPage = "docs/tutorial.md"

// tutorial is docs/tutorial.md, run a section at a time in one shell.
type tutorial struct {
	blocks []mdrun.Block
	next   int
	sess   *mdrun.Session
	// page is what the page's env block exports.
	page map[string]string
	// env is the shell's environment (start's, with HOME and Helm's
	// directories in the session's own).
	env []string
}

// replace changes one line of the page's run blocks for this cluster, and
// fails the test when the page no longer has it: each deviation from the
// page is named where the test makes it.
func (tu *tutorial) replace(t *testing.T, old, new string) {
	t.Helper()
	found := false
	for i, b := range tu.blocks {
		if b.Runs() && strings.Contains(b.Text, old) {
			tu.blocks[i].Text, found = strings.ReplaceAll(b.Text, old, new), true
		}
	}
	if !found {
		t.Fatalf("%s: no run block has %q any more: update the test's replacement", tutorialPage, old)
	}
}

// readTutorial parses the page.
func readTutorial(t *testing.T) *tutorial {
	t.Helper()
	src, err := os.ReadFile(filepath.Join(testutil.RepoRoot(), tutorialPage))
	if err != nil {
		t.Fatal(err)
	}
	blocks, err := mdrun.Parse(src)
	if err != nil {
		t.Fatalf("%s: %v", tutorialPage, err)
	}
	page := map[string]string{}
	for _, b := range blocks {
		if b.Env {
			for _, m := range exportRE.FindAllStringSubmatch(b.Text, -1) {
				page[m[1]] = m[2]
			}
		}
	}
	return &tutorial{blocks: blocks, page: page}
}

// start opens the page's shell in a new directory: env replaces the
// page's env block, and gives the PATH and KUBECONFIG.
func (tu *tutorial) start(t *testing.T, env []string) {
	dir := t.TempDir()
	tu.env = append(env, "HOME="+dir, "HELM_CONFIG_HOME="+dir+"/.helm", "HELM_CACHE_HOME="+dir+"/.helm", "HELM_DATA_HOME="+dir+"/.helm")
	tu.sess = mdrun.NewSession(dir, tu.env)
}

// exportRE is an export of the env block: export NAME=value (quoted or not).
var exportRE = regexp.MustCompile(`(?m)^export ([A-Z_]+)="?([^"\s#]*)"?`)

// runUntil runs the page's blocks up to the section named until ("": to
// the end), logging each with its output.
func (tu *tutorial) runUntil(t *testing.T, until string) {
	t.Helper()
	for ; tu.next < len(tu.blocks); tu.next++ {
		b := tu.blocks[tu.next]
		if until != "" && b.Section == until {
			return
		}
		if !b.Runs() {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		start := time.Now()
		out, err := tu.sess.Run(ctx, b)
		cancel()
		t.Logf("%s, block at %s (%s):\n%s%s", tutorialPage, b.Where(), time.Since(start).Round(100*time.Millisecond), b.Text, out)
		if err != nil {
			t.Fatalf("%s: the block at %s failed: %v", tutorialPage, b.Where(), err)
		}
	}
	if until != "" {
		t.Fatalf("%s: no section %q", tutorialPage, until)
	}
}
