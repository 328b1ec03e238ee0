// Command notice writes NOTICE: shimkit's notice, then the NOTICE file of
// every module linked into a released binary (the Apache License 2.0,
// section 4(d): a redistribution carries the notices of what it
// includes), in module order. The modules are those `go list -deps` gives
// for the release's commands (./cmd/...), from the module cache.
//
// Without -verify it writes NOTICE (make notice, part of make generate);
// with -verify it writes nothing and fails when NOTICE differs from what
// it would write (make test, through TestNotice).
//
//	notice [-verify] [-root .]
package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
)

// header is shimkit's own notice, NOTICE's first lines.
const header = `shimkit
Copyright The shimkit Authors.

This product is licensed under the Apache License, Version 2.0 (LICENSE).
The release's binaries include the modules below; their notices follow,
each under the module's path and version.
`

func main() {
	verify := flag.Bool("verify", false, "fail when NOTICE is not what it would write; write nothing")
	root := flag.String("root", ".", "the repository")
	flag.Parse()
	if err := run(os.Stdout, *root, *verify); err != nil {
		fmt.Fprintln(os.Stderr, "notice:", err)
		os.Exit(1)
	}
}

func run(out io.Writer, root string, verify bool) error {
	mods, err := linkedModules(root)
	if err != nil {
		return err
	}
	want, n, err := render(mods)
	if err != nil {
		return err
	}
	path := filepath.Join(root, "NOTICE")
	if !verify {
		return os.WriteFile(path, want, 0o644)
	}
	got, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("%w (write it with make notice)", err)
	}
	if !bytes.Equal(got, want) {
		return fmt.Errorf("%s is not the notices of the modules the release links (write it with make notice, then review and commit it)", path)
	}
	fmt.Fprintf(out, "notice: %s carries the notices of %d modules\n", path, n)
	return nil
}

// module is one module a released binary links.
type module struct {
	Path, Version, Dir string
}

// linkedModules are the modules of the release's commands' dependencies,
// but the main module, sorted by path.
func linkedModules(root string) ([]module, error) {
	cmd := exec.Command("go", "list", "-deps", "-json=Module", "./cmd/...")
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	data, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go list -deps ./cmd/...: %w\n%s", err, stderr.Bytes())
	}
	seen := map[string]module{}
	dec := json.NewDecoder(bytes.NewReader(data))
	for dec.More() {
		var p struct {
			Module *struct {
				Path, Version, Dir string
				Main               bool
			}
		}
		if err := dec.Decode(&p); err != nil {
			return nil, fmt.Errorf("go list output: %w", err)
		}
		if m := p.Module; m != nil && !m.Main {
			seen[m.Path] = module{Path: m.Path, Version: m.Version, Dir: m.Dir}
		}
	}
	var mods []module
	for _, m := range seen {
		mods = append(mods, m)
	}
	slices.SortFunc(mods, func(a, b module) int { return strings.Compare(a.Path, b.Path) })
	return mods, nil
}

// noticeFile is the module's NOTICE file ("": none): NOTICE, NOTICE.txt
// or NOTICE.md, any case.
func noticeFile(dir string) string {
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		name := strings.ToUpper(e.Name())
		if !e.IsDir() && (name == "NOTICE" || name == "NOTICE.TXT" || name == "NOTICE.MD") {
			return filepath.Join(dir, e.Name())
		}
	}
	return ""
}

// render is NOTICE's content, and how many modules' notices it holds.
func render(mods []module) ([]byte, int, error) {
	var b bytes.Buffer
	b.WriteString(header)
	n := 0
	for _, m := range mods {
		f := noticeFile(m.Dir)
		if f == "" {
			continue
		}
		text, err := os.ReadFile(f)
		if err != nil {
			return nil, 0, err
		}
		n++
		fmt.Fprintf(&b, "\n================================================================\n%s %s\n================================================================\n\n%s\n",
			m.Path, m.Version, bytes.TrimSpace(text))
	}
	return b.Bytes(), n, nil
}
