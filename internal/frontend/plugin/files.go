package plugin

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/shimkit/shimkit/operator/api/v1alpha1"
)

// fileShim is a Shim of -f and the document it came from.
type fileShim struct {
	shim   *v1alpha1.Shim
	source string // FILE, or FILE (document N) in a file of several
}

// readShims reads every document of -f as kubectl apply -f does: a file
// ("-": in) of one or more YAML or JSON documents, or a directory's
// .yaml, .yml and .json files in name order. A document of another kind
// is refused, naming it and where it is, and so is a Shim named twice.
func readShims(file string, in io.Reader) ([]fileShim, error) {
	files := []string{file}
	if st, err := os.Stat(file); err == nil && st.IsDir() {
		entries, err := os.ReadDir(file)
		if err != nil {
			return nil, err
		}
		files = files[:0]
		for _, e := range entries {
			if ext := filepath.Ext(e.Name()); !e.IsDir() && (ext == ".yaml" || ext == ".yml" || ext == ".json") {
				files = append(files, filepath.Join(file, e.Name()))
			}
		}
	}
	var out []fileShim
	for _, f := range files {
		shims, err := readDocuments(f, in)
		if err != nil {
			return nil, err
		}
		out = append(out, shims...)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: no Shim in it", file)
	}
	for i, s := range out {
		if j := slices.IndexFunc(out[:i], func(o fileShim) bool { return o.shim.Name == s.shim.Name }); j >= 0 {
			return nil, fmt.Errorf("%s: Shim %s again (first in %s)", s.source, s.shim.Name, out[j].source)
		}
	}
	return out, nil
}

// readDocuments reads the Shims of one file ("-": in).
func readDocuments(file string, in io.Reader) ([]fileShim, error) {
	var data []byte
	var err error
	if file == "-" {
		data, err = io.ReadAll(in)
	} else {
		data, err = os.ReadFile(file)
	}
	if err != nil {
		return nil, err
	}
	var docs [][]byte
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", file, err)
		}
		var m map[string]any
		if err := yaml.Unmarshal(doc, &m); err != nil || len(m) > 0 {
			docs = append(docs, doc) // (one that does not parse says why below)
		}
	}
	out := make([]fileShim, 0, len(docs))
	for i, doc := range docs {
		source := file
		if len(docs) > 1 {
			source = fmt.Sprintf("%s (document %d)", file, i+1)
		}
		s, err := decodeShim(doc, source)
		if err != nil {
			return nil, err
		}
		out = append(out, fileShim{shim: s, source: source})
	}
	return out, nil
}

// decodeShim decodes a document that must be a Shim of this API version.
func decodeShim(doc []byte, source string) (*v1alpha1.Shim, error) {
	var head struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
		Metadata   struct {
			Name string `json:"name"`
		} `json:"metadata"`
	}
	if err := yaml.Unmarshal(doc, &head); err != nil {
		return nil, fmt.Errorf("%s: %w", source, err)
	}
	want := v1alpha1.GroupVersion.WithKind("Shim")
	if gv, err := schema.ParseGroupVersion(head.APIVersion); err != nil || gv.WithKind(head.Kind) != want {
		what := strings.TrimSpace(head.APIVersion + " " + head.Kind)
		if what == "" {
			what = "a document without apiVersion and kind"
		}
		if head.Metadata.Name != "" {
			what += " " + head.Metadata.Name
		}
		return nil, fmt.Errorf("%s: %s is not a Shim (%s): kubectl shimkit plans Shims only", source, what, want.GroupVersion().String())
	}
	s := &v1alpha1.Shim{}
	if err := yaml.UnmarshalStrict(doc, s); err != nil {
		return nil, fmt.Errorf("%s: %w", source, err)
	}
	s.SetGroupVersionKind(want)
	return s, nil
}
