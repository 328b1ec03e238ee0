package main

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/shimkit/shimkit/internal/frontend/manager"
	"github.com/shimkit/shimkit/internal/yamlpath"
)

func compareFiles(chart string, files map[string][]byte) []string {
	var problems []string
	for _, name := range slices.Sorted(maps.Keys(files)) {
		got, err := os.ReadFile(filepath.Join(chart, name))
		if err != nil || !bytes.Equal(got, files[name]) {
			problems = append(problems, fmt.Sprintf("%s is not what make chart writes", filepath.Join(chart, name)))
		}
	}
	old, _ := filepath.Glob(filepath.Join(chart, "crds", "*.yaml"))
	for _, p := range old {
		rel, _ := filepath.Rel(chart, p)
		if _, ok := files[rel]; !ok {
			problems = append(problems, fmt.Sprintf("%s is in no kustomization of operator/config", p))
		}
	}
	return problems
}

func key(o object) string {
	ns, _ := yamlpath.Get(o, "metadata", "namespace").(string)
	return fmt.Sprintf("%s %s/%s", o["kind"], ns, yamlpath.Get(o, "metadata", "name"))
}

// normalize drops what Helm adds or owns: labels and annotations, and the
// Deployment's selector and pod metadata (Helm's selector also names the
// release).
func normalize(o object) object {
	data, _ := yaml.Marshal(o)
	var c object
	_ = yaml.Unmarshal(data, &c)
	if md, ok := c["metadata"].(map[string]any); ok {
		delete(md, "labels")
		delete(md, "annotations")
	}
	if c["kind"] == "Deployment" {
		if spec, ok := c["spec"].(map[string]any); ok {
			delete(spec, "selector")
			if tpl, ok := spec["template"].(map[string]any); ok {
				delete(tpl, "metadata")
			}
		}
	}
	return c
}

func compareObjects(deployed, rendered []object) []string {
	var problems []string
	chart := map[string]object{}
	for _, o := range rendered {
		chart[key(o)] = o
	}
	seen := map[string]bool{}
	for _, o := range deployed {
		k := key(o)
		if o["kind"] == "Namespace" {
			continue // the release namespace: helm install --create-namespace
		}
		seen[k] = true
		c, ok := chart[k]
		if !ok {
			problems = append(problems, fmt.Sprintf("%s: in operator/config, not in the chart's default rendering", k))
			continue
		}
		a, b := normalize(o), normalize(c)
		if !reflect.DeepEqual(a, b) {
			problems = append(problems, fmt.Sprintf("%s differs (- operator/config, + chart defaults):\n%s", k, diff(a, b)))
		}
	}
	for _, k := range slices.Sorted(maps.Keys(chart)) {
		if !seen[k] {
			problems = append(problems, fmt.Sprintf("%s: rendered by the chart's defaults, not in operator/config", k))
		}
	}
	return problems
}

func diff(a, b object) string {
	ya, _ := yaml.Marshal(a)
	yb, _ := yaml.Marshal(b)
	dir, err := os.MkdirTemp("", "chartgen")
	if err != nil {
		return err.Error()
	}
	defer os.RemoveAll(dir)
	pa, pb := filepath.Join(dir, "operator-config.yaml"), filepath.Join(dir, "chart.yaml")
	_ = os.WriteFile(pa, ya, 0o644)
	_ = os.WriteFile(pb, yb, 0o644)
	out, _ := exec.Command("diff", "-u", pa, pb).CombinedOutput()
	return string(out)
}

// operatorFlags returns the flags of shimkit-operator, each with the
// environment variable its help names (or "").
func operatorFlags() map[string]string {
	var help bytes.Buffer
	manager.Run(context.Background(), []string{"--help"}, func(string) string { return "" }, &help)
	flags := map[string]string{}
	var last string
	for line := range strings.SplitSeq(help.String(), "\n") {
		if m := helpFlag.FindStringSubmatch(line); m != nil {
			last = m[1]
			flags[last] = ""
		}
		if m := helpEnv.FindStringSubmatch(line); m != nil && last != "" {
			flags[last] = m[1]
		}
	}
	return flags
}

func operatorArgsEnv(objs []object) (args []string, env map[string]bool) {
	env = map[string]bool{}
	var d object // the one Deployment (all-values renames it)
	for _, o := range objs {
		if o["kind"] == "Deployment" {
			d = o
		}
	}
	c := yamlpath.Get(d, "spec", "template", "spec", "containers", "name="+operatorContainer)
	for _, a := range asList(yamlpath.Get(c, "args")) {
		args = append(args, fmt.Sprint(a))
	}
	for _, e := range asList(yamlpath.Get(c, "env")) {
		env[fmt.Sprint(yamlpath.Get(e, "name"))] = true
	}
	return args, env
}

func asList(v any) []any { l, _ := v.([]any); return l }

func checkFlags(defaults, all []object) []string {
	flags := operatorFlags()
	if len(flags) == 0 {
		return []string{"shimkit-operator --help lists no flag"}
	}
	var problems []string
	allArgs, allEnv := operatorArgsEnv(all)
	defArgs, _ := operatorArgsEnv(defaults)
	if len(allArgs) == 0 {
		problems = append(problems, "ci/all-values.yaml renders no Deployment with args")
	}
	set := map[string]bool{}
	for _, a := range append(slices.Clone(allArgs), defArgs...) {
		name, _, _ := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if _, ok := flags[name]; !ok || !strings.HasPrefix(a, "-") {
			problems = append(problems, fmt.Sprintf("rendered arg %q is no flag of shimkit-operator", a))
		}
		set[name] = true
	}
	names := slices.Collect(maps.Keys(flags))
	sort.Strings(names)
	for _, f := range names {
		if _, ok := unsetFlags[f]; ok || set[f] || (flags[f] != "" && allEnv[flags[f]]) {
			continue
		}
		problems = append(problems, fmt.Sprintf("flag --%s of shimkit-operator: no value of the chart sets it (add one, and set it in ci/all-values.yaml)", f))
	}
	return problems
}

// checkAllValues: ci/all-values.yaml sets every leaf of values.yaml.
func checkAllValues(chart string) ([]string, error) {
	var def, all object
	for _, f := range []struct {
		path string
		v    *object
	}{{"values.yaml", &def}, {"ci/all-values.yaml", &all}} {
		data, err := os.ReadFile(filepath.Join(chart, f.path))
		if err != nil {
			return nil, err
		}
		if err := yaml.Unmarshal(data, f.v); err != nil {
			return nil, fmt.Errorf("%s: %w", f.path, err)
		}
	}
	var problems []string
	var walk func(prefix string, d, a map[string]any)
	walk = func(prefix string, d, a map[string]any) {
		for _, k := range slices.Sorted(maps.Keys(d)) {
			av, ok := a[k]
			if !ok {
				problems = append(problems, fmt.Sprintf("ci/all-values.yaml does not set %s%s", prefix, k))
				continue
			}
			dm, dok := d[k].(map[string]any)
			am, aok := av.(map[string]any)
			if dok && aok && len(dm) > 0 {
				walk(prefix+k+".", dm, am)
			}
		}
	}
	walk("", def, all)
	return problems, nil
}
