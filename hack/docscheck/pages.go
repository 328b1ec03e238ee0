package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Page rules of the hand-written pages (docs/*.md, docs/guides/*.md): a
// guide longer than sectionWords has at least two sections (the page's
// table of contents lists them), and no table cell is longer than
// maxCell characters (long text goes into a section).
const (
	sectionWords = 300
	maxCell      = 600
)

// checkPages applies the page rules.
func checkPages(root string) []error {
	var errs []error
	for _, glob := range []string{"docs/*.md", "docs/guides/*.md"} {
		pages, _ := filepath.Glob(filepath.Join(root, glob))
		for _, p := range pages {
			data, err := os.ReadFile(p)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			rel, _ := filepath.Rel(root, p)
			errs = append(errs, checkPage(rel, string(data), strings.HasPrefix(rel, filepath.Join("docs", "guides")))...)
		}
	}
	return errs
}

// checkPage applies the page rules to one page's text.
func checkPage(name, text string, guide bool) []error {
	var errs []error
	sections, fence := 0, false
	for n, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(line, "```") {
			fence = !fence
		}
		switch {
		case fence:
		case strings.HasPrefix(line, "## "):
			sections++
		case strings.HasPrefix(line, "|"):
			for _, cell := range strings.Split(line, "|") {
				if len(cell) > maxCell {
					errs = append(errs, fmt.Errorf("%s:%d: a table cell of %d characters (at most %d): move the text into a section", name, n+1, len(cell), maxCell))
				}
			}
		}
	}
	if words := len(strings.Fields(text)); guide && words > sectionWords && sections < 2 {
		errs = append(errs, fmt.Errorf("%s: a guide of %d words with %d sections: split it with ## headings", name, words, sections))
	}
	return errs
}
