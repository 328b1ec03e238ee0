package main

import (
	"bufio"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// machinePaths are directories of one machine: a command that names one
// runs nowhere else.
var machinePaths = []string{"/tmp/", "/work/"}

// checkMachinePaths fails on a line of the README, BENCHMARKS.md,
// CHANGELOG.md or a page under docs/ that names a machine's directory:
// every command the docs give runs from a clone (mktemp -d, a clone's
// own paths).
func checkMachinePaths(root string) []error {
	files := []string{"README.md", "BENCHMARKS.md", "CHANGELOG.md"}
	_ = filepath.WalkDir(filepath.Join(root, "docs"), func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(path, ".md") {
			rel, _ := filepath.Rel(root, path)
			files = append(files, rel)
		}
		return nil
	})
	var errs []error
	for _, name := range files {
		f, err := os.Open(filepath.Join(root, name))
		if err != nil {
			continue // a file the repository does not have
		}
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for n := 1; sc.Scan(); n++ {
			for _, p := range machinePaths {
				if strings.Contains(sc.Text(), p) {
					errs = append(errs, fmt.Errorf("%s:%d: names a machine's directory %s: give a command anyone can run from a clone", name, n, p))
				}
			}
		}
		f.Close()
	}
	return errs
}
