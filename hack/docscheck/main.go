// Command docscheck checks the documentation beyond what mkdocs build
// --strict checks (Debian 12's mkdocs 1.4 checks that linked pages exist,
// not their anchors, and only reports pages missing from the nav). It
// fails when, in the built site, an internal link's page or anchor is
// missing; when a page under docs/ is not in mkdocs.yml's nav; when
// README.md is longer than 200 lines or a link of it into docs/ does not
// resolve, anchor included; when a section title of the README before it
// was cut (readme-sections.txt) is no heading of the site; when a status
// reason of the generated reference has no "what to do" row in the
// troubleshooting guide; when a whole Shim in README.md or docs/ does
// not decode strictly as the API type (an unknown or misspelt field);
// when a page names a machine's directory (/tmp/, /work/); and when a
// guide of over 300 words has fewer than two sections or a hand-written
// page has a table cell over 600 characters.
//
//	docscheck -site site
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
)

func main() {
	site := flag.String("site", "site", "the built site (mkdocs build --site-dir)")
	root := flag.String("root", ".", "the repository")
	flag.Parse()
	if err := errors.Join(checkAll(*root, *site)...); err != nil {
		fmt.Fprintln(os.Stderr, "docscheck:", err)
		os.Exit(1)
	}
}

// checkAll runs every check and returns all their problems.
func checkAll(root, site string) []error {
	var errs []error
	s, err := loadSite(site)
	if err != nil {
		return []error{err}
	}
	errs = append(errs, s.checkLinks()...)
	errs = append(errs, checkNav(root)...)
	errs = append(errs, checkREADME(root, s)...)
	errs = append(errs, checkSections(root, s)...)
	errs = append(errs, checkReasons(root)...)
	errs = append(errs, checkShims(root)...)
	errs = append(errs, checkMachinePaths(root)...)
	errs = append(errs, checkPages(root)...)
	return errs
}
