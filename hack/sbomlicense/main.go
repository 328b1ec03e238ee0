// Command sbomlicense names the license of each CycloneDX SBOM's component
// (metadata.component.licenses), which cyclonedx-gomod leaves out unless
// it detects licenses by downloading every module (make release is
// offline). It rewrites each file in place.
//
//	sbomlicense -license Apache-2.0 FILE.cdx.json...
package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
)

func main() {
	license := flag.String("license", "", "SPDX license ID of the SBOMs' component")
	flag.Parse()
	if *license == "" || flag.NArg() == 0 {
		fmt.Fprintln(os.Stderr, "sbomlicense: want -license and one or more SBOM files")
		os.Exit(2)
	}
	for _, f := range flag.Args() {
		if err := name(f, *license); err != nil {
			fmt.Fprintf(os.Stderr, "sbomlicense: %s: %v\n", f, err)
			os.Exit(1)
		}
	}
}

// name sets the license of the SBOM's component in the file.
func name(path, license string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	out, err := withLicense(data, license)
	if err != nil {
		return err
	}
	return os.WriteFile(path, out, 0o644)
}

// withLicense returns the SBOM with metadata.component.licenses the one
// license ID.
func withLicense(sbom []byte, license string) ([]byte, error) {
	var doc map[string]any
	if err := json.Unmarshal(sbom, &doc); err != nil {
		return nil, err
	}
	meta, _ := doc["metadata"].(map[string]any)
	component, _ := meta["component"].(map[string]any)
	if component == nil {
		return nil, errors.New("no metadata.component")
	}
	component["licenses"] = []any{map[string]any{"license": map[string]any{"id": license}}}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(doc); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}
