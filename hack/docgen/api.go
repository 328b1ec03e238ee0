package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
)

// crdRefDocsConfig leaves out the fields every object has.
const crdRefDocsConfig = `processor:
  ignoreFields:
    - "TypeMeta$"
render:
  kubernetesVersion: "1.34"
`

// apiReference runs crd-ref-docs on the API package and returns its
// Markdown, its title replaced by the page's.
func apiReference(bin, api string) ([]byte, error) {
	tmp, err := os.MkdirTemp("", "docgen-api-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	config := filepath.Join(tmp, "config.yaml")
	if err := os.WriteFile(config, []byte(crdRefDocsConfig), 0o644); err != nil {
		return nil, err
	}
	out := filepath.Join(tmp, "api.md")
	cmd := exec.Command(bin, "--source-path", api, "--config", config, "--renderer", "markdown", "--output-path", out, "--log-level", "ERROR")
	if msg, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("%s: %w\n%s", bin, err, msg)
	}
	md, err := os.ReadFile(out)
	if err != nil {
		return nil, err
	}
	title := []byte("# API Reference\n")
	if !bytes.HasPrefix(md, title) {
		return nil, fmt.Errorf("%s: output does not start with %q", bin, title)
	}
	intro := "# Shim API reference\n\nEvery field of the Shim resource (`containerd.x-k8s.io/v1alpha1`), from the Go types of\n`operator/api/v1alpha1`. `kubectl explain shim.spec` shows the same text in a cluster.\n"
	return append([]byte(intro), md[len(title):]...), nil
}
