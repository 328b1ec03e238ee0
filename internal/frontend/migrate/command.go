package migrate

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/shimkit/shimkit/internal/frontend/manager"
	"github.com/shimkit/shimkit/operator"
	"github.com/shimkit/shimkit/operator/api/v1alpha1"
)

// FieldOwner is the field manager of the Shims --apply creates.
const FieldOwner = "shimkit-migrate"

// Usage is the command's help.
const Usage = `Usage: shimkit-operator migrate [--apply] [--kubeconfig FILE] [NAME ...]

Reads the Shims of runtime-class-manager (runtime.spinkube.dev/v1alpha1 and,
from its KWasm era, runtime.kwasm.sh/v1alpha1; a group whose CRD is not
installed is skipped) and prints the shimkit Shims (containerd.x-k8s.io/v1alpha1)
that replace them, as YAML: same name, node selector, artifacts, RuntimeClass
and handler, rollout strategy and runtime options, and spec.migrateFrom naming
the Shim each replaces. NAMEs limit it to the Shims of those names.

Nothing is written unless --apply is given: then each Shim is created; one that
exists already is left as it is when its spec is the same, and refused
otherwise. A Shim that cannot be mapped exactly is reported with the reason and
skipped, never half-mapped.

Stop runtime-class-manager's operator first (helm uninstall keeps its CRDs and
Shims): --apply refuses while a Deployment runs it (found by its container's
SHIM_NODE_INSTALLER_IMAGE). The shimkit operator then takes the RuntimeClass
over before any node, and each node runtime-class-manager provisioned with one
containerd restart.

Exit status: 0 when every Shim was mapped (and, with --apply, created or
already there), 1 when one was skipped or refused, 2 for bad usage.

Flags:
`

// Run runs the migrate command with args (those after "migrate") and
// returns its exit status.
func Run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("shimkit-operator migrate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	apply := fs.Bool("apply", false, "create the Shims (default: print them only)")
	kubeconfig := fs.String("kubeconfig", getenv("KUBECONFIG"), "kubeconfig file; in-cluster config or ~/.kube/config when empty [KUBECONFIG]")
	fs.Usage = func() {
		fmt.Fprint(stderr, Usage)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	c, err := manager.NewClient(*kubeconfig)
	if err != nil {
		fmt.Fprintf(stderr, "shimkit-operator migrate: %v\n", err)
		return 1
	}
	m := &migration{c: c, names: fs.Args(), stdout: stdout, stderr: stderr}
	if err := m.run(ctx, *apply); err != nil {
		fmt.Fprintf(stderr, "shimkit-operator migrate: %v\n", err)
		return 1
	}
	if m.failed {
		return 1
	}
	return 0
}

// migration is one run of the command.
type migration struct {
	c              client.Client
	names          []string
	stdout, stderr io.Writer
	failed         bool
}

// item is one runtime-class-manager Shim and what became of it.
type item struct {
	from  string // runtime.spinkube.dev/v1alpha1 Shim spin-v2
	shim  *v1alpha1.Shim
	notes []string
}

func (m *migration) skip(from string, format string, args ...any) {
	m.failed = true
	fmt.Fprintf(m.stderr, "skipped %s: %s\n", from, fmt.Sprintf(format, args...))
}

func (m *migration) run(ctx context.Context, apply bool) error {
	items, err := m.read(ctx)
	if err != nil {
		return err
	}
	running, err := m.rcmOperators(ctx)
	switch {
	case err != nil:
		fmt.Fprintf(m.stderr, "warning: cannot tell whether runtime-class-manager's operator runs (%v): make sure it is stopped before the shimkit Shims are applied\n", err)
	case len(running) > 0 && apply && len(items) > 0:
		m.failed = true
		fmt.Fprintf(m.stderr, "refused: runtime-class-manager's operator runs (Deployment %s): stop it first (helm uninstall keeps its CRDs and Shims, or scale it to 0); otherwise it reinstalls every node shimkit migrates. Nothing was created\n", strings.Join(running, ", "))
		return nil
	case len(running) > 0:
		fmt.Fprintf(m.stderr, "warning: runtime-class-manager's operator runs (Deployment %s): stop it before applying these Shims (helm uninstall keeps its CRDs and Shims)\n", strings.Join(running, ", "))
	}
	for _, it := range items {
		if !apply {
			m.print(it)
			continue
		}
		m.create(ctx, it)
	}
	return nil
}

// read lists the Shims of both groups, maps them, and reports those it
// skips. A name in both groups is taken from the current one.
func (m *migration) read(ctx context.Context) ([]item, error) {
	var items []item
	seen := map[string]string{}
	found := map[string]bool{}
	for _, group := range Groups() {
		list := &unstructured.UnstructuredList{}
		list.SetAPIVersion(group + "/" + operator.RCMVersion)
		list.SetKind(operator.RCMKind + "List")
		if err := m.c.List(ctx, list); err != nil {
			if meta.IsNoMatchError(err) || apierrors.IsNotFound(err) {
				fmt.Fprintf(m.stderr, "no %s/%s Shims: that API is not installed\n", group, operator.RCMVersion)
				continue
			}
			return nil, fmt.Errorf("list %s/%s Shims: %w", group, operator.RCMVersion, err)
		}
		sort.Slice(list.Items, func(i, j int) bool { return list.Items[i].GetName() < list.Items[j].GetName() })
		for i := range list.Items {
			u := &list.Items[i]
			from := Source(u)
			if len(m.names) > 0 && !slices.Contains(m.names, u.GetName()) {
				continue
			}
			found[u.GetName()] = true
			if other, ok := seen[u.GetName()]; ok {
				m.skip(from, "%s has the same name and is migrated instead: a shimkit Shim replaces one of them (set spec.migrateFrom.runtimeClassManager.apiGroup to %s by hand if this one owns the RuntimeClass)", other, group)
				continue
			}
			shim, notes, err := Convert(u)
			if err != nil {
				m.skip(from, "%v", err)
				continue
			}
			seen[u.GetName()] = from
			items = append(items, item{from: from, shim: shim, notes: notes})
		}
	}
	for _, n := range m.names {
		if !found[n] {
			m.skip("Shim "+n, "no runtime-class-manager Shim of that name")
		}
	}
	return items, nil
}

// rcmEnv is an environment variable of runtime-class-manager's operator
// container, in every release (its Helm chart and its kustomize manifests).
const rcmEnv = "SHIM_NODE_INSTALLER_IMAGE"

// rcmOperators lists the Deployments, in any namespace, that run
// runtime-class-manager's operator (a container with rcmEnv) with
// replicas.
func (m *migration) rcmOperators(ctx context.Context) ([]string, error) {
	var list appsv1.DeploymentList
	if err := m.c.List(ctx, &list); err != nil {
		return nil, err
	}
	var out []string
	for _, d := range list.Items {
		if d.Spec.Replicas != nil && *d.Spec.Replicas == 0 {
			continue
		}
		for _, c := range d.Spec.Template.Spec.Containers {
			if slices.ContainsFunc(c.Env, func(e corev1.EnvVar) bool { return e.Name == rcmEnv }) {
				out = append(out, d.Namespace+"/"+d.Name)
				break
			}
		}
	}
	return out, nil
}

// Source names a runtime-class-manager Shim as the command's output does:
// "runtime.spinkube.dev/v1alpha1 Shim spin-v2".
func Source(u *unstructured.Unstructured) string {
	return fmt.Sprintf("%s %s %s", u.GetAPIVersion(), u.GetKind(), u.GetName())
}

// print writes the Shim as a YAML document.
func (m *migration) print(it item) {
	data, err := Render(it.from, it.shim, it.notes)
	if err != nil {
		m.skip(it.from, "%v", err)
		return
	}
	_, _ = m.stdout.Write(data)
}

// Render writes a mapped Shim as the YAML document the command prints:
// where it comes from and the notes as comments, then the Shim as one
// would write it (no status, no empty metadata).
func Render(from string, shim *v1alpha1.Shim, notes []string) ([]byte, error) {
	data, err := shimYAML(shim)
	if err != nil {
		return nil, err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "---\n# From %s.\n", from)
	for _, n := range notes {
		fmt.Fprintf(&b, "# Note: %s.\n", n)
	}
	b.Write(data)
	return []byte(b.String()), nil
}

// shimYAML is the Shim as one would write it: no status, no empty
// metadata.
func shimYAML(shim *v1alpha1.Shim) ([]byte, error) {
	obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(shim)
	if err != nil {
		return nil, err
	}
	delete(obj, "status")
	unstructured.RemoveNestedField(obj, "metadata", "creationTimestamp")
	data, err := yaml.Marshal(obj)
	if err != nil {
		return nil, err
	}
	// File modes read as people write them (YAML 1.1 octal, as kubectl
	// reads it): 0755, not 493.
	return fileMode.ReplaceAllFunc(data, func(m []byte) []byte {
		sub := fileMode.FindSubmatch(m)
		n, _ := strconv.Atoi(string(sub[2]))
		return fmt.Appendf(nil, "%smode: 0%o", sub[1], n)
	}), nil
}

// fileMode matches the mode of a spec.files entry in the YAML.
var fileMode = regexp.MustCompile(`(?m)^(  (?:- |  ))mode: ([0-9]+)$`)

// create creates the Shim; one that exists is left alone when its spec is
// the same, else refused.
func (m *migration) create(ctx context.Context, it item) {
	err := m.c.Create(ctx, it.shim.DeepCopy(), client.FieldOwner(FieldOwner))
	switch {
	case err == nil:
		fmt.Fprintf(m.stdout, "shim.containerd.x-k8s.io/%s created (from %s)\n", it.shim.Name, it.from)
		for _, n := range it.notes {
			fmt.Fprintf(m.stdout, "  note: %s\n", n)
		}
		return
	case !apierrors.IsAlreadyExists(err):
		m.failed = true
		fmt.Fprintf(m.stderr, "refused %s: create Shim %s: %v\n", it.from, it.shim.Name, err)
		return
	}
	existing := &v1alpha1.Shim{}
	if err := m.c.Get(ctx, client.ObjectKey{Name: it.shim.Name}, existing); err != nil {
		m.failed = true
		fmt.Fprintf(m.stderr, "refused %s: read Shim %s: %v\n", it.from, it.shim.Name, err)
		return
	}
	if diff := specDiff(existing.Spec, it.shim.Spec); len(diff) > 0 {
		m.failed = true
		fmt.Fprintf(m.stderr, "refused %s: shim.containerd.x-k8s.io/%s exists with another spec (%s differ): it is left as it is; delete it, or edit it to the printed Shim\n",
			it.from, it.shim.Name, strings.Join(diff, ", "))
		return
	}
	fmt.Fprintf(m.stdout, "shim.containerd.x-k8s.io/%s unchanged (exists with this spec)\n", it.shim.Name)
}

// specDiff names the spec fields (top level) in which a and b differ, as
// JSON values.
func specDiff(a, b v1alpha1.ShimSpec) []string {
	am, bm := jsonMap(a), jsonMap(b)
	var out []string
	for k := range am {
		if !reflect.DeepEqual(am[k], bm[k]) {
			out = append(out, "spec."+k)
		}
	}
	for k := range bm {
		if _, ok := am[k]; !ok {
			out = append(out, "spec."+k)
		}
	}
	sort.Strings(out)
	return out
}

func jsonMap(v any) map[string]any {
	data, _ := json.Marshal(v)
	var m map[string]any
	_ = json.Unmarshal(data, &m)
	return m
}
