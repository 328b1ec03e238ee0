package main

import (
	"bytes"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"unicode"

	"sigs.k8s.io/yaml"
)

// crdRefDocsConfig leaves out the fields every object has.
const crdRefDocsConfig = `processor:
  ignoreFields:
    - "TypeMeta$"
render:
  kubernetesVersion: "1.34"
`

// crdRefDocsTemplates replace crd-ref-docs's Markdown templates: they
// write the types it read as JSON (apiGroup), which apiPage lays out.
//
//go:embed templates/*.tpl
var crdRefDocsTemplates embed.FS

// maxCell is the longest a table cell of the API page may be. A field's
// cell holds its doc when doc and limits fit in cellText; a longer doc
// keeps its first sentence there and the rest goes into a collapsible
// note under the table.
const (
	maxCell  = 600
	cellText = 440
)

// apiGroup is one API group version as the template writes it.
type apiGroup struct {
	GroupVersion string     `json:"groupVersion"`
	Doc          string     `json:"doc"`
	Types        []*apiType `json:"types"`
}

// apiType is one Go type of the API package.
type apiType struct {
	Name    string `json:"name"`
	Doc     string `json:"doc"`
	Alias   string `json:"alias"` // the underlying type of an alias, rendered
	GVK     *struct{ Group, Version, Kind string }
	Markers markers     `json:"markers"`
	Enum    []enumValue `json:"enum"`
	Fields  []*apiField `json:"fields"`
}

type enumValue struct {
	Name string `json:"name"`
	Doc  string `json:"doc"`
}

// apiField is one field of a struct type; Type is crd-ref-docs's
// rendering, a Markdown link for a type of the package.
type apiField struct {
	Name    string  `json:"name"`
	Type    string  `json:"type"`
	Doc     string  `json:"doc"`
	Markers markers `json:"markers"`
}

// markers are a type's or field's kubebuilder markers, each with its
// values (the last one counts).
type markers map[string][]json.RawMessage

// get decodes the last value of marker name into v.
func (m markers) get(name string, v any) bool {
	vs := m[name]
	return len(vs) > 0 && json.Unmarshal(vs[len(vs)-1], v) == nil
}

// crdSchema is the part of a CRD's OpenAPI schema the page reads: which
// fields the API server requires.
type crdSchema struct {
	Required             []string              `json:"required"`
	Properties           map[string]*crdSchema `json:"properties"`
	Items                *crdSchema            `json:"items"`
	AdditionalProperties json.RawMessage       `json:"additionalProperties"`
}

// crdSchemaOf reads the openAPIV3Schema of version from a CRD file.
func crdSchemaOf(path, version string) (*crdSchema, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var crd struct {
		Spec struct {
			Versions []struct {
				Name   string
				Schema struct {
					OpenAPIV3Schema *crdSchema `json:"openAPIV3Schema"`
				}
			}
		}
	}
	if err := yaml.Unmarshal(data, &crd); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	for _, v := range crd.Spec.Versions {
		if v.Name == version && v.Schema.OpenAPIV3Schema != nil {
			return v.Schema.OpenAPIV3Schema, nil
		}
	}
	return nil, fmt.Errorf("%s: no schema of version %s", path, version)
}

// element is the schema of a list's items or a map's values, or s.
func (s *crdSchema) element() *crdSchema {
	for s != nil && s.Items != nil {
		s = s.Items
	}
	if s != nil && len(s.AdditionalProperties) > 0 {
		var v crdSchema
		if json.Unmarshal(s.AdditionalProperties, &v) == nil {
			return &v
		}
	}
	return s
}

// apiReference runs crd-ref-docs on the API package with the JSON
// template and lays out the page, checking which fields are required in
// the CRD generated from the same types.
func apiReference(bin, api, crd string) ([]byte, error) {
	groups, err := crdRefDocsTypes(bin, api)
	if err != nil {
		return nil, err
	}
	if len(groups) != 1 {
		return nil, fmt.Errorf("%s: want one API group version, got %d", api, len(groups))
	}
	version := groups[0].GroupVersion[strings.LastIndex(groups[0].GroupVersion, "/")+1:]
	schema, err := crdSchemaOf(crd, version)
	if err != nil {
		return nil, err
	}
	page, err := apiPage(groups[0], schema)
	if err != nil {
		return nil, err
	}
	if err := checkAPIPage(page); err != nil {
		return nil, err
	}
	return page, nil
}

// crdRefDocsTypes runs crd-ref-docs with the JSON template.
func crdRefDocsTypes(bin, api string) ([]apiGroup, error) {
	tmp, err := os.MkdirTemp("", "docgen-api-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	config := filepath.Join(tmp, "config.yaml")
	if err := os.WriteFile(config, []byte(crdRefDocsConfig), 0o644); err != nil {
		return nil, err
	}
	tpls, err := crdRefDocsTemplates.ReadDir("templates")
	if err != nil {
		return nil, err
	}
	for _, e := range tpls {
		data, err := crdRefDocsTemplates.ReadFile("templates/" + e.Name())
		if err != nil {
			return nil, err
		}
		if err := os.WriteFile(filepath.Join(tmp, e.Name()), data, 0o644); err != nil {
			return nil, err
		}
	}
	out := filepath.Join(tmp, "api.json")
	cmd := exec.Command(bin, "--source-path", api, "--config", config, "--renderer", "markdown",
		"--templates-dir", tmp, "--output-path", out, "--log-level", "ERROR")
	if msg, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("%s: %w\n%s", bin, err, msg)
	}
	data, err := os.ReadFile(out)
	if err != nil {
		return nil, err
	}
	var groups []apiGroup
	if err := json.Unmarshal(data, &groups); err != nil {
		return nil, fmt.Errorf("%s: its JSON: %w", bin, err)
	}
	return groups, nil
}

// typeUse is a type of the page with where it appears.
type typeUse struct {
	t      *apiType
	schema *crdSchema
	paths  []string // field paths from the object's root, as spec.handlers[].runtimeClass
}

var (
	mapType      = regexp.MustCompile(`^object \(keys:.*?, values:(.*)\)$`)
	markdownLink = regexp.MustCompile(`\[([^\]]*)\]\([^)]*\)`)
)

// localLink finds a link to a type of the page in a rendered type.
var localLink = regexp.MustCompile(`\]\(#([a-z0-9-]+)\)`)

// walk lists the types reachable from root, breadth-first in the order
// of their fields: the order a reader meets them. Every type reached is
// in uses, with every path it appears at.
func walk(root *apiType, path string, schema *crdSchema, byAnchor map[string]*apiType, uses map[string]*typeUse) ([]*typeUse, error) {
	type item struct {
		t      *apiType
		path   string
		schema *crdSchema
	}
	var order []*typeUse
	queue := []item{{root, path, schema}}
	for len(queue) > 0 {
		it := queue[0]
		queue = queue[1:]
		u, seen := uses[it.t.Name]
		if !seen {
			u = &typeUse{t: it.t, schema: it.schema}
			uses[it.t.Name] = u
			order = append(order, u)
		}
		if !slices.Contains(u.paths, it.path) {
			u.paths = append(u.paths, it.path)
		}
		if strings.Count(it.path, ".") > 12 {
			continue // a type that contains itself
		}
		for _, f := range it.t.Fields {
			m := localLink.FindAllStringSubmatch(f.Type, -1)
			if len(m) == 0 {
				continue
			}
			child := byAnchor[m[len(m)-1][1]]
			if child == nil {
				continue
			}
			var sub *crdSchema
			if it.schema != nil {
				sub = it.schema.Properties[f.Name].element()
			}
			if it.schema != nil && sub == nil && len(child.Fields) > 0 {
				return nil, fmt.Errorf("%s.%s is not in the CRD: regenerate it (make generate)", it.t.Name, f.Name)
			}
			p := f.Name
			switch {
			case strings.HasSuffix(f.Type, " array"):
				p += "[]"
			case strings.HasPrefix(f.Type, "object ("):
				p += ".*"
			}
			if it.path != "" {
				p = it.path + "." + p
			}
			queue = append(queue, item{child, p, sub})
		}
	}
	return order, nil
}

// apiPage lays out the page: Shim first, then its spec's types in the
// order a reader meets them, then the status the operator writes.
func apiPage(g apiGroup, schema *crdSchema) ([]byte, error) {
	byName := map[string]*apiType{}
	byAnchor := map[string]*apiType{}
	for _, t := range g.Types {
		byName[t.Name] = t
		byAnchor[strings.ToLower(t.Name)] = t
	}
	shim, spec, status := byName["Shim"], byName["ShimSpec"], byName["ShimStatus"]
	if shim == nil || shim.GVK == nil || spec == nil || status == nil {
		return nil, errors.New("the API has no Shim kind with a ShimSpec and a ShimStatus")
	}
	uses := map[string]*typeUse{}
	uses["Shim"] = &typeUse{t: shim, schema: schema}
	specTypes, err := walk(spec, "spec", schema.Properties["spec"], byAnchor, uses)
	if err != nil {
		return nil, err
	}
	statusTypes, err := walk(status, "status", schema.Properties["status"], byAnchor, uses)
	if err != nil {
		return nil, err
	}
	var others []*typeUse
	for _, t := range g.Types {
		if _, ok := uses[t.Name]; !ok && t.GVK != nil {
			u := &typeUse{t: t}
			uses[t.Name] = u
			others = append(others, u)
		}
	}

	var b bytes.Buffer
	gv := shim.GVK.Group + "/" + shim.GVK.Version
	fmt.Fprintf(&b, "# Shim API reference\n\n")
	fmt.Fprintf(&b, "Every field of the Shim resource (`%s`), generated from the Go types of the API package\n", gv)
	b.WriteString("`github.com/shimkit/shimkit/operator/api/v1alpha1`; `kubectl explain shim.spec` shows the same text in a cluster.\n")
	b.WriteString("[Shim](#shim) and [ShimSpec](#shimspec) come first, then the types of the spec in the order its fields\n")
	b.WriteString("name them, then the [status](#status-written-by-the-operator) the operator writes.\n\n")
	b.WriteString("*Required* says whether the API server rejects an object without the field. Every field is checked on\n")
	b.WriteString("admission: its limits are under its description, and a type's further rules are listed under its table.\n")
	b.WriteString("A long description has its first sentence in the table and the rest in a note under it.\n\n")

	writeShim(&b, shim, gv)
	b.WriteString("## Spec\n\nWhat you set: the desired state of a Shim.\n\n")
	for _, u := range specTypes {
		writeType(&b, u, uses, true)
	}
	b.WriteString("## Status (written by the operator)\n\n")
	b.WriteString("What the operator observed; it writes the status subresource, and you never set it.\n")
	b.WriteString("`kubectl get shim NAME -o yaml` shows it; [Status reasons](reasons.md) lists the reasons of its conditions.\n\n")
	for _, u := range statusTypes {
		writeType(&b, u, uses, false)
	}
	if len(others) > 0 {
		b.WriteString("## Other types\n\n")
		for _, u := range others {
			writeType(&b, u, uses, false)
		}
	}
	return append(bytes.TrimRight(b.Bytes(), "\n"), '\n'), nil
}

// writeShim writes the kind's section: what it is, how kubectl shows it,
// and its top-level fields.
func writeShim(b *bytes.Buffer, shim *apiType, gv string) {
	b.WriteString("## Shim\n\n")
	facts := []string{"`apiVersion: " + gv + "`", "`kind: " + shim.GVK.Kind + "`"}
	var res struct {
		ShortName []string
		Scope     string
	}
	if shim.Markers.get("kubebuilder:resource", &res) {
		if res.Scope == "Cluster" {
			facts = append(facts, "cluster-scoped (no namespace)")
		} else if res.Scope != "" {
			facts = append(facts, strings.ToLower(res.Scope)+"-scoped")
		}
		for _, s := range res.ShortName {
			facts = append(facts, "short name `"+s+"`")
		}
	}
	b.WriteString(strings.Join(facts, " · ") + "\n\n")
	b.WriteString(escapeText(paragraphs(shim.Doc)) + "\n\n")
	if vs := shim.Markers["kubebuilder:printcolumn"]; len(vs) > 0 {
		var normal, wide []string
		for _, v := range vs {
			var c struct {
				Name     string
				Priority int
			}
			if json.Unmarshal(v, &c) == nil {
				if c.Priority == 0 {
					normal = append(normal, c.Name)
				} else {
					wide = append(wide, c.Name)
				}
			}
		}
		fmt.Fprintf(b, "`kubectl get shims` shows %s", andList(normal))
		if len(wide) > 0 {
			fmt.Fprintf(b, "; `-o wide` adds %s", andList(wide))
		}
		b.WriteString(".\n\n")
	}
	b.WriteString("| Field | Type | Required | Description |\n| --- | --- | --- | --- |\n")
	fmt.Fprintf(b, "| `apiVersion` | string | yes | `%s` |\n", gv)
	fmt.Fprintf(b, "| `kind` | string | yes | `%s` |\n", shim.GVK.Kind)
	for _, f := range shim.Fields {
		switch f.Name {
		case "metadata":
			fmt.Fprintf(b, "| `metadata` | %s | yes | The object's metadata: `metadata.name` names the Shim. |\n", fieldType(f.Type))
		case "spec":
			fmt.Fprintf(b, "| `spec` | %s | yes | What you set: the desired state. |\n", fieldType(f.Type))
		case "status":
			fmt.Fprintf(b, "| `status` | %s | no | Written by the operator: the observed state. |\n", fieldType(f.Type))
		default:
			fmt.Fprintf(b, "| `%s` | %s | yes | %s |\n", f.Name, fieldType(f.Type), apiCell(paragraphs(f.Doc)))
		}
	}
	b.WriteString("\n")
}

// writeType writes one type's section: its paths, doc, fields (or
// values) and rules; required adds the Required column.
func writeType(b *bytes.Buffer, u *typeUse, uses map[string]*typeUse, required bool) {
	t := u.t
	fmt.Fprintf(b, "### %s\n\n", t.Name)
	if len(u.paths) > 0 {
		const most = 4
		ps := make([]string, 0, most)
		for i, p := range u.paths {
			if i == most {
				break
			}
			ps = append(ps, "`"+p+"`")
		}
		more := ""
		if len(u.paths) > most {
			more = fmt.Sprintf(" and %d more", len(u.paths)-most)
		}
		label := "Path"
		if len(u.paths) > 1 {
			label = "Paths"
		}
		fmt.Fprintf(b, "%s: %s%s.\n\n", label, strings.Join(ps, ", "), more)
	}
	if t.Doc != "" {
		b.WriteString(escapeText(paragraphs(t.Doc)) + "\n\n")
	}
	if t.Alias != "" {
		var c []string
		if vs := enumOf(t.Markers); len(vs) > 0 {
			c = append(c, "one of "+codeList(vs))
		}
		fmt.Fprintf(b, "A %s%s.\n\n", stripLinks(t.Alias), prefixed(", ", strings.Join(c, ", ")))
		documented := false
		for _, e := range t.Enum {
			documented = documented || e.Doc != ""
		}
		if documented {
			b.WriteString("Values:\n\n")
			for _, e := range t.Enum {
				fmt.Fprintf(b, "- `%s`%s\n", e.Name, prefixed(": ", escapeText(paragraphs(e.Doc))))
			}
			b.WriteString("\n")
		}
	}
	if len(t.Fields) > 0 {
		var notes []string
		if required {
			b.WriteString("| Field | Type | Required | Description |\n| --- | --- | --- | --- |\n")
		} else {
			b.WriteString("| Field | Type | Description |\n| --- | --- | --- |\n")
		}
		for _, f := range t.Fields {
			limits := constraints(f.Markers)
			head, rest := splitDoc(paragraphs(f.Doc), cellText-len(limits))
			cell := apiCell(head)
			if rest != "" {
				cell += " *(more below)*"
				notes = append(notes, fmt.Sprintf("??? note \"More on `%s`\"\n\n%s\n", f.Name, indent(escapeText(rest))))
			}
			if cell != "" && limits != "" {
				cell += "<br>"
			}
			cell += limits
			if required {
				req := "no"
				if u.schema != nil && slices.Contains(u.schema.Required, f.Name) {
					req = "yes"
				}
				fmt.Fprintf(b, "| `%s` | %s | %s | %s |\n", f.Name, fieldType(f.Type), req, cell)
			} else {
				fmt.Fprintf(b, "| `%s` | %s | %s |\n", f.Name, fieldType(f.Type), cell)
			}
		}
		b.WriteString("\n")
		for _, n := range notes {
			b.WriteString(n + "\n")
		}
	}
	if rules := rulesOf(t, uses); len(rules) > 0 {
		b.WriteString("Admission also checks:\n\n")
		for _, r := range rules {
			fmt.Fprintf(b, "- %s\n", r)
		}
		b.WriteString("\n")
	}
}

// rulesOf are the messages of a type's CEL rules and of its fields' own
// (a field of a type of the page has that type's, shown there). A rule
// whose message is computed has no fixed text to show.
func rulesOf(t *apiType, uses map[string]*typeUse) []string {
	var out []string
	add := func(field string, ms markers) {
		for _, raw := range ms["kubebuilder:validation:XValidation"] {
			var r struct{ Message string }
			if json.Unmarshal(raw, &r) != nil || r.Message == "" {
				continue
			}
			s := escapeText(r.Message)
			if field != "" {
				s = "`" + field + "`: " + s
			}
			if !slices.Contains(out, s) {
				out = append(out, s)
			}
		}
	}
	add("", t.Markers)
fields:
	for _, f := range t.Fields {
		if m := localLink.FindAllStringSubmatch(f.Type, -1); len(m) > 0 {
			for _, u := range uses {
				if strings.ToLower(u.t.Name) == m[len(m)-1][1] && sameRules(u.t.Markers, f.Markers) {
					continue fields
				}
			}
		}
		// A message that names its field already is not prefixed again.
		for _, raw := range f.Markers["kubebuilder:validation:XValidation"] {
			var r struct{ Message string }
			if json.Unmarshal(raw, &r) != nil || r.Message == "" {
				continue
			}
			s := escapeText(r.Message)
			if head, _, _ := strings.Cut(r.Message, ": "); !strings.Contains(head, f.Name) {
				s = "`" + f.Name + "`: " + s
			}
			if !slices.Contains(out, s) {
				out = append(out, s)
			}
		}
	}
	return out
}

// sameRules says whether a field's rules are those of its type (markers
// propagated from the type).
func sameRules(typ, field markers) bool {
	a, b := typ["kubebuilder:validation:XValidation"], field["kubebuilder:validation:XValidation"]
	return slices.EqualFunc(a, b, func(x, y json.RawMessage) bool { return bytes.Equal(x, y) })
}

// enumOf reads an enum marker's values.
func enumOf(m markers) []string {
	var vs []any
	if !m.get("kubebuilder:validation:Enum", &vs) {
		return nil
	}
	out := make([]string, len(vs))
	for i, v := range vs {
		out[i] = fmt.Sprint(v)
	}
	return out
}

// constraints says a field's default and validation in a few words.
func constraints(m markers) string {
	var out []string
	var def struct{ Value json.RawMessage }
	if m.get("kubebuilder:default", &def) && len(def.Value) > 0 {
		v := string(def.Value)
		var s string
		if json.Unmarshal(def.Value, &s) == nil {
			v = s
		}
		out = append(out, "Default "+code(v)+".")
	}
	if vs := enumOf(m); len(vs) > 0 {
		out = append(out, "One of "+codeList(vs)+".")
	}
	var s string
	if m.get("kubebuilder:validation:Pattern", &s) {
		out = append(out, "Matches "+code(s)+".")
	}
	if r := span(m, "kubebuilder:validation:MinLength", "kubebuilder:validation:MaxLength", "character"); r != "" {
		out = append(out, r+".")
	}
	if r := span(m, "kubebuilder:validation:Minimum", "kubebuilder:validation:Maximum", ""); r != "" {
		out = append(out, r+".")
	}
	if r := span(m, "kubebuilder:validation:MinItems", "kubebuilder:validation:MaxItems", "item"); r != "" {
		out = append(out, r+".")
	}
	var each []string
	var items []any
	if m.get("kubebuilder:validation:items:Enum", &items) {
		vs := make([]string, len(items))
		for i, v := range items {
			vs[i] = fmt.Sprint(v)
		}
		each = append(each, "one of "+codeList(vs))
	}
	if m.get("kubebuilder:validation:items:Pattern", &s) {
		each = append(each, "matches "+code(s))
	}
	if r := span(m, "kubebuilder:validation:items:MinLength", "kubebuilder:validation:items:MaxLength", "character"); r != "" {
		each = append(each, strings.ToLower(r[:1])+r[1:])
	}
	if len(each) > 0 {
		out = append(out, "Each "+strings.Join(each, ", ")+".")
	}
	var listType string
	if m.get("listType", &listType) {
		var keys []string
		for _, raw := range m["listMapKey"] {
			var k string
			if json.Unmarshal(raw, &k) == nil {
				keys = append(keys, "`"+k+"`")
			}
		}
		switch {
		case listType == "set":
			out = append(out, "No duplicates.")
		case listType == "map" && len(keys) > 0:
			out = append(out, "Unique by "+strings.Join(keys, " and ")+".")
		}
	}
	return strings.Join(out, " ")
}

// span says a minimum and maximum: "At most 63 characters", "1 to 10 items".
func span(m markers, minName, maxName, unit string) string {
	var lo, hi json.Number
	hasLo, hasHi := m.get(minName, &lo), m.get(maxName, &hi)
	plural := func(n json.Number) string {
		if unit == "" {
			return string(n)
		}
		if n == "1" {
			return string(n) + " " + unit
		}
		return string(n) + " " + unit + "s"
	}
	switch {
	case hasLo && hasHi:
		return string(lo) + " to " + plural(hi)
	case hasLo:
		return "At least " + plural(lo)
	case hasHi:
		return "At most " + plural(hi)
	}
	return ""
}

// fieldType renders crd-ref-docs's type of a field for a YAML reader.
func fieldType(s string) string {
	if m := mapType.FindStringSubmatch(s); m != nil {
		return "map of " + m[1]
	}
	if t, ok := strings.CutSuffix(s, " array"); ok {
		return "list of " + t
	}
	return s
}

// stripLinks keeps the text of Markdown links.
func stripLinks(s string) string {
	return markdownLink.ReplaceAllString(s, "$1")
}

// paragraphs joins a doc's lines into one paragraph (its paragraphs with
// a blank line's worth of break).
func paragraphs(doc string) string {
	paras := strings.Split(strings.TrimSpace(doc), "\n\n")
	for i, p := range paras {
		paras[i] = strings.Join(strings.Fields(p), " ")
	}
	return strings.Join(paras, "\n\n")
}

// splitDoc keeps a doc of at most limit characters whole; a longer one
// is split after its first sentence, or, when that is longer too, at a
// word before limit.
func splitDoc(doc string, limit int) (head, rest string) {
	if len(doc) <= limit {
		return doc, ""
	}
	depth := 0
	for i, r := range doc {
		switch r {
		case '(', '[', '{':
			depth++
		case ')', ']', '}':
			depth--
		case '.':
			if depth > 0 || i+1 >= len(doc) || (doc[i+1] != ' ' && doc[i+1] != '\n') {
				continue
			}
			if w := lastWord(doc[:i]); w == "e.g" || w == "i.e" || w == "vs" {
				continue
			}
			if i+1 <= limit {
				return doc[:i+1], strings.TrimSpace(doc[i+1:])
			}
			return cutDoc(doc, limit)
		}
	}
	return cutDoc(doc, limit)
}

// cutDoc cuts a doc before limit: after its last "; " in the second half,
// else at a word.
func cutDoc(doc string, limit int) (head, rest string) {
	if i := strings.LastIndex(doc[:limit], "; "); i > limit/2 {
		return doc[:i+1] + " …", strings.ToUpper(doc[i+2:i+3]) + doc[i+3:]
	}
	cut := strings.LastIndex(doc[:limit], " ")
	return doc[:cut] + " …", "… " + doc[cut+1:]
}

func lastWord(s string) string {
	return s[strings.LastIndexAny(s, " (\n")+1:]
}

// escapeText makes doc text literal Markdown (no emphasis, HTML or
// attribute list out of *, <, > and braces).
func escapeText(s string) string {
	return strings.NewReplacer(`\`, `\\`, "*", `\*`, "<", "&lt;", ">", "&gt;", "{", `\{`, "}", `\}`, "|", `\|`).Replace(s)
}

// indent indents text's non-empty lines by four spaces, the body of a
// note.
func indent(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		if l != "" {
			lines[i] = "    " + l
		}
	}
	return strings.Join(lines, "\n")
}

// apiCell makes doc text literal in a table cell, its paragraphs on
// one line.
func apiCell(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(escapeText(s), "\n\n", "<br><br>"), "\n", " ")
}

// code is s as a code span. A | would end a table cell on GitHub, and
// its escape \| stays a backslash in MkDocs: such a span is HTML, every
// character but letters and digits an entity that no Markdown reads.
func code(s string) string {
	if strings.Contains(s, "|") {
		var b strings.Builder
		b.WriteString("<code>")
		for _, r := range s {
			if r < 128 && !unicode.IsLetter(r) && !unicode.IsDigit(r) {
				fmt.Fprintf(&b, "&#%d;", r)
			} else {
				b.WriteRune(r)
			}
		}
		b.WriteString("</code>")
		return b.String()
	}
	if strings.Contains(s, "`") {
		return "`` " + s + " ``"
	}
	return "`" + s + "`"
}

func codeList(vs []string) string {
	out := make([]string, len(vs))
	for i, v := range vs {
		out[i] = code(v)
	}
	return strings.Join(out, ", ")
}

// andList joins words as "a, b and c".
func andList(vs []string) string {
	if len(vs) < 2 {
		return strings.Join(vs, "")
	}
	return strings.Join(vs[:len(vs)-1], ", ") + " and " + vs[len(vs)-1]
}

func prefixed(prefix, s string) string {
	if s == "" {
		return ""
	}
	return prefix + s
}

// checkAPIPage fails on a page a reader would stumble on: one that does
// not open with the Shim kind, has a table cell longer than maxCell, or
// crd-ref-docs's "Optional: {}" noise.
func checkAPIPage(page []byte) error {
	var errs []error
	text := string(page)
	if strings.Contains(text, "Optional: {}") || strings.Contains(text, `Optional: \{\}`) {
		errs = append(errs, errors.New(`the page says "Optional: {}"`))
	}
	var headings []string
	for _, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(line, "## ") || strings.HasPrefix(line, "### ") {
			headings = append(headings, line)
		}
		if !strings.HasPrefix(line, "|") {
			continue
		}
		for _, cell := range tableCells(line) {
			if len(cell) > maxCell {
				errs = append(errs, fmt.Errorf("a table cell of %d characters (at most %d): %.80s...", len(cell), maxCell, cell))
			}
		}
	}
	if len(headings) < 2 || headings[0] != "## Shim" || headings[1] != "## Spec" {
		errs = append(errs, fmt.Errorf("the page does not open with ## Shim and ## Spec: %q", headings[:min(2, len(headings))]))
	} else if len(headings) < 3 || headings[2] != "### ShimSpec" {
		errs = append(errs, errors.New("the spec does not open with ShimSpec"))
	}
	status := slices.Index(headings, "## Status (written by the operator)")
	if status < 0 || status+1 >= len(headings) || headings[status+1] != "### ShimStatus" {
		errs = append(errs, errors.New("no status section opening with ShimStatus"))
	}
	return errors.Join(errs...)
}

// tableCells splits a Markdown table row at its unescaped pipes.
func tableCells(row string) []string {
	var cells []string
	var cur strings.Builder
	for i := 0; i < len(row); i++ {
		switch {
		case row[i] == '\\' && i+1 < len(row):
			cur.WriteByte(row[i])
			cur.WriteByte(row[i+1])
			i++
		case row[i] == '|':
			cells = append(cells, strings.TrimSpace(cur.String()))
			cur.Reset()
		default:
			cur.WriteByte(row[i])
		}
	}
	cells = append(cells, strings.TrimSpace(cur.String()))
	return cells[1 : len(cells)-1]
}
