package main

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/shimkit/shimkit/operator/api/v1alpha1"
)

// maxREADMELines is what fits on a screen or two: what shimkit is, the
// picture, the commands, an example and the links into the site.
const maxREADMELines = 200

// checkNav finds the pages under docs/ that mkdocs.yml's nav leaves out,
// and the nav's entries that name no page.
func checkNav(root string) []error {
	data, err := os.ReadFile(filepath.Join(root, "mkdocs.yml"))
	if err != nil {
		return []error{err}
	}
	var cfg struct {
		Nav []any `json:"nav"`
	}
	if err := yaml.Unmarshal(data, &cfg); err != nil {
		return []error{fmt.Errorf("mkdocs.yml: %w", err)}
	}
	inNav := map[string]bool{}
	var walk func(any)
	walk = func(v any) {
		switch v := v.(type) {
		case string:
			inNav[v] = true
		case []any:
			for _, e := range v {
				walk(e)
			}
		case map[string]any:
			for _, e := range v {
				walk(e)
			}
		}
	}
	walk(cfg.Nav)
	var errs []error
	docs := filepath.Join(root, "docs")
	onDisk := map[string]bool{}
	_ = filepath.WalkDir(docs, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".md") {
			rel, _ := filepath.Rel(docs, p)
			onDisk[filepath.ToSlash(rel)] = true
		}
		return err
	})
	for _, p := range sortedKeys(onDisk) {
		if !inNav[p] {
			errs = append(errs, fmt.Errorf("docs/%s: not in mkdocs.yml's nav", p))
		}
	}
	for _, p := range sortedKeys(inNav) {
		if strings.HasSuffix(p, ".md") && !onDisk[p] {
			errs = append(errs, fmt.Errorf("mkdocs.yml: nav names docs/%s, which does not exist", p))
		}
	}
	return errs
}

// mdLink is a Markdown link's target.
var mdLink = regexp.MustCompile(`\]\(([^)\s]+)\)`)

// checkREADME checks the README's length and that its links to files of
// the repository exist, and those into docs/ reach their anchors in s.
func checkREADME(root string, s *site) []error {
	data, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		return []error{err}
	}
	var errs []error
	if n := bytes.Count(data, []byte("\n")); n > maxREADMELines {
		errs = append(errs, fmt.Errorf("README.md: %d lines, more than %d: move the detail into docs/", n, maxREADMELines))
	}
	if !bytes.Contains(data, []byte("make test")) {
		errs = append(errs, fmt.Errorf("README.md: does not say `make test`, the command CI runs"))
	}
	for _, m := range mdLink.FindAllSubmatch(data, -1) {
		link := string(m[1])
		if strings.Contains(link, "://") || strings.HasPrefix(link, "#") || strings.HasPrefix(link, "mailto:") {
			continue
		}
		file, anchor, _ := strings.Cut(link, "#")
		if _, err := os.Stat(filepath.Join(root, file)); err != nil {
			errs = append(errs, fmt.Errorf("README.md: link %q: %w", link, err))
			continue
		}
		if rel, ok := strings.CutPrefix(file, "docs/"); ok && strings.HasSuffix(rel, ".md") && s != nil {
			if err := s.checkLink(sitePage(rel), "#"+anchor); anchor != "" && err != nil {
				errs = append(errs, fmt.Errorf("README.md: link %q: %w", link, err))
			}
		}
	}
	return errs
}

// checkSections finds the README's former section titles that are no
// heading of the site.
func checkSections(root string, s *site) []error {
	titles, err := readLines(filepath.Join(root, "hack", "docscheck", "readme-sections.txt"))
	if err != nil {
		return []error{err}
	}
	headings := map[string]bool{}
	for _, p := range s.pages {
		for _, h := range p.headings {
			headings[h] = true
		}
	}
	var errs []error
	for _, t := range titles {
		if !headings[t] {
			errs = append(errs, fmt.Errorf("the README's section %q is no heading of the site: keep it as a page's or a section's title", t))
		}
	}
	return errs
}

// readLines reads a file's lines, less blank lines and # comments.
func readLines(file string) ([]string, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if l := strings.TrimSpace(sc.Text()); l != "" && !strings.HasPrefix(l, "#") {
			out = append(out, l)
		}
	}
	return out, sc.Err()
}

// firstCell is the first cell of a Markdown table's row.
var firstCell = regexp.MustCompile(`(?m)^\| *([^|]+?) *\|`)
var backquoted = regexp.MustCompile("`([A-Za-z]+)`")

// tableReasons are the backquoted words of the first cell of a Markdown
// table's rows.
func tableReasons(md string) map[string]bool {
	out := map[string]bool{}
	for _, m := range firstCell.FindAllStringSubmatch(md, -1) {
		for _, b := range backquoted.FindAllStringSubmatch(m[1], -1) {
			out[b[1]] = true
		}
	}
	return out
}

// whatToDo is the heading of the troubleshooting guide's table.
const whatToDo = "### What to do, reason by reason"

// checkReasons finds the reasons of the generated reference
// (docs/reference/reasons.md) that the troubleshooting guide's table
// does not say what to do about. Success reasons need no row.
func checkReasons(root string) []error {
	ref, err := os.ReadFile(filepath.Join(root, "docs", "reference", "reasons.md"))
	if err != nil {
		return []error{err}
	}
	guide, err := os.ReadFile(filepath.Join(root, "docs", "guides", "operating.md"))
	if err != nil {
		return []error{err}
	}
	_, table, ok := strings.Cut(string(guide), whatToDo)
	if !ok {
		return []error{fmt.Errorf("docs/guides/operating.md: no section %q", whatToDo)}
	}
	documented := tableReasons(table)
	var errs []error
	for _, r := range sortedKeys(tableReasons(string(ref))) {
		if !documented[r] && !noActionReasons[r] {
			errs = append(errs, fmt.Errorf("docs/guides/operating.md: reason %s (docs/reference/reasons.md) has no row in %q: say what a user does about it", r, whatToDo))
		}
	}
	return errs
}

// noActionReasons are the reasons of things going as they should: nothing
// to do about them.
var noActionReasons = map[string]bool{
	"Reason":                 true, // the tables' header
	v1alpha1.ReasonRolledOut: true, v1alpha1.ReasonRollingOut: true, v1alpha1.ReasonDeleting: true,
	v1alpha1.ReasonNodesChanging: true, v1alpha1.ReasonIdle: true, v1alpha1.ReasonNoFailures: true,
	v1alpha1.ReasonRuntimeClassPending: true, v1alpha1.ReasonPaused: true, v1alpha1.ReasonWaitingForWindow: true,
	v1alpha1.ReasonBaking: true, v1alpha1.ReasonReverting: true, v1alpha1.ReasonReconciling: true,
	v1alpha1.ReasonStalled: true, v1alpha1.ReasonHalted: true,
}

// checkShims decodes every whole Shim of a yaml block in README.md and
// docs/ strictly, as the API type.
func checkShims(root string) []error {
	files := []string{filepath.Join(root, "README.md")}
	_ = filepath.WalkDir(filepath.Join(root, "docs"), func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".md") {
			files = append(files, p)
		}
		return err
	})
	var errs []error
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for i, doc := range shimDocs(string(data)) {
			var s v1alpha1.Shim
			if err := yaml.UnmarshalStrict([]byte(doc), &s); err != nil {
				errs = append(errs, fmt.Errorf("%s: Shim %d: %w", f, i+1, err))
			} else if s.Name == "" || s.Spec.FetchStrategy.Type == "" {
				errs = append(errs, fmt.Errorf("%s: Shim %d: no name or fetchStrategy.type", f, i+1))
			}
		}
	}
	return errs
}

var yamlBlock = regexp.MustCompile("(?s)```yaml\n(.*?)```")

// shimDocs are the YAML documents of the text's yaml blocks that are
// whole Shims (apiVersion containerd.x-k8s.io/..., kind Shim).
func shimDocs(md string) []string {
	var out []string
	for _, m := range yamlBlock.FindAllStringSubmatch(md, -1) {
		for _, doc := range strings.Split(m[1], "\n---\n") {
			if strings.Contains(doc, "apiVersion: "+v1alpha1.GroupVersion.String()) && strings.Contains(doc, "\nkind: Shim\n") {
				out = append(out, doc)
			}
		}
	}
	return out
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
