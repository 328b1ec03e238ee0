package mdrun

import (
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/yaml"

	"github.com/shimkit/shimkit/operator/api/v1alpha1"
)

// root is the repository's root, from this package's directory.
const root = "../../.."

// tutorialSections are the tutorial's "## " sections, in order: the e2e
// test splits the page at "Upgrade Spin".
var tutorialSections = []string{
	"Before you begin",
	"Install shimkit",
	"Choose the nodes",
	"Preview and apply the Shim",
	"Run a Spin app",
	"Pin what was fetched",
	"Upgrade Spin",
	"Remove Spin",
	"Uninstall shimkit",
}

// tutorialVariables are what the env block exports, and all it does: the
// e2e test sets its own values instead.
var tutorialVariables = []string{"SHIMKIT_VERSION", "SHIMKIT_CHART", "SPIN_RELEASES", "SPIN_VERSION", "SPIN_NEXT_VERSION", "SPIN_APP_IMAGE"}

// TestTutorial holds docs/tutorial.md to the contract its e2e run relies
// on: its sections in order, one env block exporting exactly the
// tutorial's variables, only sh blocks to run (each run or skipped with a
// reason) and shown blocks in languages that are never run, and the
// commands the tutorial is about in blocks that run.
func TestTutorial(t *testing.T) {
	src, blocks := tutorial(t)
	if got := sections(src); !slices.Equal(got, tutorialSections) {
		t.Errorf("sections:\n got %q\nwant %q", got, tutorialSections)
	}
	var env []Block
	var run strings.Builder
	for _, b := range blocks {
		switch {
		case b.Env:
			env = append(env, b)
		case b.Runs():
			run.WriteString(b.Text)
		case b.Lang == "sh" && b.Skip == "":
			t.Errorf("sh block at %s neither runs nor says why not", b.Where())
		case b.Lang != "sh" && !slices.Contains([]string{"yaml", "console", "text"}, b.Lang):
			t.Errorf("block at %s is %q: a page's commands are sh blocks (run, or skipped with a reason); shown blocks are yaml, console or text", b.Where(), b.Lang)
		}
	}
	if len(env) != 1 {
		t.Fatalf("%d env blocks, want 1", len(env))
	}
	if first := firstSh(blocks); first.Line != env[0].Line {
		t.Errorf("the env block (line %d) is not the first sh block (line %d)", env[0].Line, first.Line)
	}
	vars := envVariables(t, env[0])
	if got := slices.Sorted(maps.Keys(vars)); !slices.Equal(got, slices.Sorted(slices.Values(tutorialVariables))) {
		t.Errorf("the env block exports %q, want exactly %q", got, tutorialVariables)
	}
	for _, cmd := range []string{
		"helm install shimkit \"$SHIMKIT_CHART\" --version \"$SHIMKIT_VERSION\"",
		"kubectl label node \"$NODE\"",
		"kubectl shimkit plan -f spin-shim.yaml",
		"kubectl apply -f spin-shim.yaml",
		"kubectl wait --for=condition=Ready shim/spin",
		"kubectl shimkit status spin",
		"runtimeClassName: wasmtime-spin-v2",
		"image: $SPIN_APP_IMAGE",
		".status.artifact.platforms",
		"$SPIN_RELEASES/$SPIN_NEXT_VERSION/",
		"kubectl shimkit plan --delete spin",
		"kubectl delete shim spin",
		"kubectl wait --for=delete shim/spin",
		"helm uninstall shimkit",
	} {
		if !strings.Contains(run.String(), cmd) {
			t.Errorf("no block that runs has %q", cmd)
		}
	}
	for _, b := range blocks {
		if b.Runs() && b.Section == "Upgrade Spin" && strings.Contains(b.Text, "$SPIN_VERSION") {
			t.Errorf("block at %s still names $SPIN_VERSION: the upgrade is to $SPIN_NEXT_VERSION", b.Where())
		}
	}
	chart, err := os.ReadFile(filepath.Join(root, "charts/shimkit/Chart.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var meta struct {
		KubeVersion string `json:"kubeVersion"`
	}
	if err := yaml.Unmarshal(chart, &meta); err != nil {
		t.Fatal(err)
	}
	oldest := strings.TrimSuffix(strings.TrimPrefix(meta.KubeVersion, ">="), ".0-0")
	if want := "version " + oldest + " or later (the chart's `kubeVersion`"; oldest == "" || !strings.Contains(string(src), want) {
		t.Errorf("the tutorial does not say %q (Chart.yaml's kubeVersion %q)", want, meta.KubeVersion)
	}
	if m := regexp.MustCompile(`(/home/|/root/|/tmp/|/work/)\S*`).FindString(string(src)); m != "" {
		t.Errorf("the tutorial names a path of some machine: %s", m)
	}
}

// TestSamplesSelectTutorialLabels: the Spin sample is the tutorial's Spin
// Shim, with the tutorial's versions written out, on the nodes the
// tutorial labels; the README's first example is that Shim too, after the
// command that labels a node. The other samples select a label of the same
// scheme (runtime.shimkit.dev/<runtime>=enabled) that the tutorial names.
func TestSamplesSelectTutorialLabels(t *testing.T) {
	src, blocks := tutorial(t)
	var label string
	re := regexp.MustCompile(`kubectl label node "\$NODE" (\S+=\S+)\n`)
	for _, b := range blocks {
		if m := re.FindStringSubmatch(b.Text); b.Runs() && m != nil {
			label = m[1]
			break
		}
	}
	if label == "" {
		t.Fatal(`no block that runs labels a node: kubectl label node "$NODE" KEY=VALUE`)
	}
	key, value, _ := strings.Cut(label, "=")
	prefix, _, _ := strings.Cut(key, "/")

	env := envVariables(t, firstSh(blocks))
	// The node choice exports CONTROL_PLANE: empty on a worker, as the
	// samples' nodes are.
	env["CONTROL_PLANE"] = ""
	tutorialShim := heredocShim(t, blocks, "spin-shim.yaml", env)

	files, err := filepath.Glob(filepath.Join(root, "operator/config/samples/shim_*.yaml"))
	if err != nil || len(files) < 3 {
		t.Fatalf("samples: %v %v", files, err)
	}
	for _, f := range files {
		s := readShim(t, f)
		sel := s.Spec.NodeSelector
		switch {
		case filepath.Base(f) == "shim_anonhttp.yaml":
			if !reflect.DeepEqual(s.Spec, tutorialShim.Spec) || s.Name != tutorialShim.Name {
				t.Errorf("%s is not the tutorial's Spin Shim with SPIN_VERSION=%s (-tutorial +sample):\n%s", f, env["SPIN_VERSION"], cmp.Diff(tutorialShim, s))
			}
			if !maps.Equal(sel, map[string]string{key: value}) {
				t.Errorf("%s selects %v, want the tutorial's label %s", f, sel, label)
			}
		case len(sel) != 1:
			t.Errorf("%s selects %v: want one label, of the tutorial's scheme %s/<runtime>=%s", f, sel, prefix, value)
		default:
			for k, v := range sel {
				if !strings.HasPrefix(k, prefix+"/") || v != value || !strings.Contains(string(src), "`"+k+"="+v+"`") {
					t.Errorf("%s selects %s=%s: want a label of the tutorial's scheme %s/<runtime>=%s that the tutorial names", f, k, v, prefix, value)
				}
			}
		}
	}

	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	rb, err := Parse(readme)
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(rb, func(b Block) bool { return b.Lang == "yaml" })
	if i < 0 {
		t.Fatal("README.md has no yaml example")
	}
	first := &v1alpha1.Shim{}
	if err := yaml.UnmarshalStrict([]byte(rb[i].Text), first); err != nil {
		t.Fatalf("README.md's first example (line %d): %v", rb[i].Line, err)
	}
	sample := readShim(t, filepath.Join(root, "operator/config/samples/shim_anonhttp.yaml"))
	if !reflect.DeepEqual(first.Spec, sample.Spec) || first.Name != sample.Name {
		t.Errorf("README.md's first example (line %d) is not the Spin sample (-sample +README):\n%s", rb[i].Line, cmp.Diff(sample, first))
	}
	before := strings.Join(strings.Split(string(readme), "\n")[:rb[i].Line], "\n")
	if want := "kubectl label node NODE " + label; !strings.Contains(before, want) {
		t.Errorf("README.md does not say %q before its first example", want)
	}
	if !strings.Contains(string(readme), "(docs/tutorial.md)") {
		t.Error("README.md does not link the tutorial")
	}
}

func tutorial(t *testing.T) ([]byte, []Block) {
	t.Helper()
	src, err := os.ReadFile(filepath.Join(root, "docs/tutorial.md"))
	if err != nil {
		t.Fatal(err)
	}
	blocks, err := Parse(src)
	if err != nil {
		t.Fatalf("docs/tutorial.md: %v", err)
	}
	return src, blocks
}

// sections are the page's "## " headings outside code blocks.
func sections(src []byte) []string {
	var out []string
	fence := ""
	for line := range strings.SplitSeq(string(src), "\n") {
		if m := fenceRE.FindStringSubmatch(line); m != nil {
			switch {
			case fence == "":
				fence = m[2]
			case m[3] == "" && len(m[2]) >= len(fence):
				fence = ""
			}
			continue
		}
		if fence == "" && strings.HasPrefix(line, "## ") {
			out = append(out, strings.TrimSpace(line[3:]))
		}
	}
	return out
}

func firstSh(blocks []Block) Block {
	for _, b := range blocks {
		if b.Lang == "sh" {
			return b
		}
	}
	return Block{}
}

// envVariables reads the env block, which must be export NAME=VALUE lines
// only, and expands each value with the ones before.
func envVariables(t *testing.T, b Block) map[string]string {
	t.Helper()
	re := regexp.MustCompile(`^export ([A-Z_][A-Z0-9_]*)=(\S+)$`)
	vars := map[string]string{}
	for line := range strings.SplitSeq(strings.TrimSpace(b.Text), "\n") {
		m := re.FindStringSubmatch(line)
		if m == nil {
			t.Errorf("env block at %s: %q is not export NAME=VALUE", b.Where(), line)
			continue
		}
		if _, dup := vars[m[1]]; dup {
			t.Errorf("env block at %s exports %s twice", b.Where(), m[1])
		}
		vars[m[1]] = os.Expand(m[2], func(k string) string { return vars[k] })
	}
	return vars
}

// heredocShim is the Shim the first block that runs writes to file with
// cat > file <<EOF, its variables expanded with vars.
func heredocShim(t *testing.T, blocks []Block, file string, vars map[string]string) *v1alpha1.Shim {
	t.Helper()
	re := regexp.MustCompile(`(?s)cat > ` + regexp.QuoteMeta(file) + ` <<EOF\n(.*?)\nEOF\n`)
	for _, b := range blocks {
		m := re.FindStringSubmatch(b.Text)
		if !b.Runs() || m == nil {
			continue
		}
		text := os.Expand(m[1], func(k string) string {
			v, ok := vars[k]
			if !ok {
				t.Errorf("block at %s: %s uses $%s, which the env block does not set", b.Where(), file, k)
			}
			return v
		})
		s := &v1alpha1.Shim{}
		if err := yaml.UnmarshalStrict([]byte(text), s); err != nil {
			t.Fatalf("block at %s: %s: %v", b.Where(), file, err)
		}
		return s
	}
	t.Fatalf("no block that runs writes %s with cat > %s <<EOF", file, file)
	return nil
}

func readShim(t *testing.T, file string) *v1alpha1.Shim {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	s := &v1alpha1.Shim{}
	if err := yaml.UnmarshalStrict(data, s); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	return s
}
