package main

import (
	"encoding/json"
	"testing"
)

// TestWithLicense: the component gets the license, the rest stays; an
// SBOM without a component is refused.
func TestWithLicense(t *testing.T) {
	out, err := withLicense([]byte(`{"bomFormat":"CycloneDX","metadata":{"component":{"name":"shimkit-operator","licenses":[{"license":{"id":"MIT"}}]}},"components":[{"name":"k8s.io/api"}]}`), "Apache-2.0")
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		BomFormat string `json:"bomFormat"`
		Metadata  struct {
			Component struct {
				Name     string `json:"name"`
				Licenses []struct {
					License struct{ ID string } `json:"license"`
				} `json:"licenses"`
			} `json:"component"`
		} `json:"metadata"`
		Components []struct{ Name string } `json:"components"`
	}
	if err := json.Unmarshal(out, &doc); err != nil {
		t.Fatal(err)
	}
	c := doc.Metadata.Component
	if doc.BomFormat != "CycloneDX" || c.Name != "shimkit-operator" || len(doc.Components) != 1 || len(c.Licenses) != 1 || c.Licenses[0].License.ID != "Apache-2.0" {
		t.Errorf("got %s", out)
	}
	if _, err := withLicense([]byte(`{"metadata":{}}`), "Apache-2.0"); err == nil {
		t.Error("an SBOM without metadata.component was taken")
	}
}
