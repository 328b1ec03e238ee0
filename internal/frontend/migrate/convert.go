package migrate

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strings"

	"github.com/pelletier/go-toml/v2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/utils/ptr"

	"github.com/shimkit/shimkit/installer/plan"
	"github.com/shimkit/shimkit/operator"
	"github.com/shimkit/shimkit/operator/api/v1alpha1"
)

// Groups are the API groups of runtime-class-manager's Shim, current
// first; the version is operator.RCMVersion, the kind operator.RCMKind.
func Groups() []string { return []string{v1alpha1.RCMGroup, v1alpha1.RCMGroupKWasm} }

// ErrUnmappable is wrapped by every reason Convert gives for a Shim it
// does not map.
var ErrUnmappable = errors.New("cannot be mapped")

// spec is runtime-class-manager's ShimSpec, of both its eras: the KWasm
// one (runtime.kwasm.sh: fetchStrategy.type and anonHttp required, no
// platforms, no containerdRuntimeOptions) and the current one.
type spec struct {
	NodeSelector  map[string]string `json:"nodeSelector,omitempty"`
	FetchStrategy struct {
		Type     string `json:"type,omitempty"` // deprecated, ignored by runtime-class-manager
		AnonHTTP *struct {
			Location string `json:"location"`
		} `json:"anonHttp,omitempty"`
		Platforms []struct {
			OS       string `json:"os"`
			Arch     string `json:"arch"`
			Location string `json:"location"`
			SHA256   string `json:"sha256,omitempty"`
		} `json:"platforms,omitempty"`
	} `json:"fetchStrategy"`
	RuntimeClass struct {
		Name    string `json:"name"`
		Handler string `json:"handler"`
	} `json:"runtimeClass"`
	RolloutStrategy struct {
		Type    string `json:"type"`
		Rolling *struct {
			MaxUpdate int `json:"maxUpdate"`
		} `json:"rolling,omitempty"`
	} `json:"rolloutStrategy"`
	ContainerdRuntimeOptions map[string]string `json:"containerdRuntimeOptions,omitempty"`
}

var (
	httpURL    = regexp.MustCompile(`^https?://[^\s]+$`)
	sha256Hex  = regexp.MustCompile(`^[a-f0-9]{64}$`)
	versioned  = regexp.MustCompile(`^([a-z0-9][-a-z0-9]*)-v([0-9]+)$`)
	bareKey    = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)
	trailingNA = regexp.MustCompile(`[^a-zA-Z0-9]+$`)
)

// Convert maps a Shim of runtime-class-manager (either group) to the
// shimkit Shim that replaces it: same name, node selector, artifacts,
// RuntimeClass (name and handler), rollout strategy and runtime options,
// the runtime type and bundle file that give the handler the binary
// runtime-class-manager installed, and spec.migrateFrom naming it. notes
// say what a reviewer should know (an artifact without sha256, a value
// defaulted). A Shim that cannot be mapped exactly is not mapped at all:
// the error wraps ErrUnmappable and names the field.
//
// The result is checked with operator.BuildPlan for every platform it has
// an artifact for, on a node runtime-class-manager provisioned: each plan
// migrates the handler, whose runtime path is the bundle's
// containerd-shim-<name>, the file runtime-class-manager's artifact holds.
func Convert(u *unstructured.Unstructured) (shim *v1alpha1.Shim, notes []string, err error) {
	gv, _ := schemaGroup(u.GetAPIVersion())
	if !slices.Contains(Groups(), gv) || u.GetKind() != operator.RCMKind {
		return nil, nil, fmt.Errorf("%s %s: not a runtime-class-manager Shim: %w", u.GetAPIVersion(), u.GetKind(), ErrUnmappable)
	}
	c := &converter{name: u.GetName(), group: gv}
	shim, err = c.convert(u.Object["spec"])
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %w", ErrUnmappable, err)
	}
	if err := check(shim); err != nil {
		return nil, nil, fmt.Errorf("%w: the mapped Shim is refused: %w", ErrUnmappable, err)
	}
	return shim, c.notes, nil
}

// schemaGroup is the group of an apiVersion.
func schemaGroup(apiVersion string) (string, string) {
	if g, v, ok := strings.Cut(apiVersion, "/"); ok {
		return g, v
	}
	return "", apiVersion
}

type converter struct {
	name, group string
	notes       []string
}

func (c *converter) note(format string, args ...any) {
	c.notes = append(c.notes, fmt.Sprintf(format, args...))
}

func (c *converter) convert(raw any) (*v1alpha1.Shim, error) {
	var s spec
	data, err := json.Marshal(raw)
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&s); err != nil {
		return nil, fmt.Errorf("spec: %w (a field this migration does not know is not dropped silently)", err)
	}
	if errs := validation.IsDNS1123Label(c.name); len(errs) > 0 || c.name == v1alpha1.ReservedHandler {
		return nil, fmt.Errorf("metadata.name %q: runtime-class-manager registered the containerd handler under the Shim's name, and a shimkit handler is a DNS label of at most 63 characters, not runc", c.name)
	}
	if s.RuntimeClass.Handler != c.name {
		return nil, fmt.Errorf("spec.runtimeClass.handler %q is not the Shim's name %q, under which runtime-class-manager registered the containerd handler: pods of RuntimeClass %s could not run; correct the Shim (or migrate it by hand)",
			s.RuntimeClass.Handler, c.name, s.RuntimeClass.Name)
	}
	rcName := rcmRuntimeClassName(s.RuntimeClass.Name)
	if errs := validation.IsDNS1123Subdomain(rcName); len(errs) > 0 {
		return nil, fmt.Errorf("spec.runtimeClass.name %q: not a RuntimeClass name (%s)", s.RuntimeClass.Name, strings.Join(errs, "; "))
	}
	if rcName != s.RuntimeClass.Name {
		c.note("runtime-class-manager named the RuntimeClass %s (spec.runtimeClass.name %s, cut to 63 characters)", rcName, s.RuntimeClass.Name)
	}
	shim := &v1alpha1.Shim{
		TypeMeta:   metav1.TypeMeta{APIVersion: v1alpha1.GroupVersion.String(), Kind: "Shim"},
		ObjectMeta: metav1.ObjectMeta{Name: c.name},
		Spec: v1alpha1.ShimSpec{
			NodeSelector: s.NodeSelector,
			RuntimeClass: v1alpha1.RuntimeClassSpec{Name: rcName, Handler: c.name},
			MigrateFrom:  &v1alpha1.MigrateFrom{RuntimeClassManager: v1alpha1.RuntimeClassManagerShim{Shim: c.name, APIGroup: c.group}},
		},
	}
	if shim.Spec.FetchStrategy, err = c.fetch(s); err != nil {
		return nil, err
	}
	if shim.Spec.RolloutStrategy, err = c.rollout(s); err != nil {
		return nil, err
	}
	if shim.Spec.RuntimeOptions, err = runtimeOptions(s.ContainerdRuntimeOptions); err != nil {
		return nil, err
	}
	c.binary(&shim.Spec)
	return shim, nil
}

// rcmRuntimeClassName is the RuntimeClass's name as runtime-class-manager
// gave it (trimK8sName): cut to 63 characters, trailing characters other
// than letters and digits stripped.
func rcmRuntimeClassName(name string) string {
	return trailingNA.ReplaceAllString(name[:min(len(name), 63)], "")
}

// fetch maps the artifacts. runtime-class-manager used platforms when
// there were any (the first entry of the node's os and arch; a node of
// none failed) and anonHttp.location otherwise, for every node.
func (c *converter) fetch(s spec) (v1alpha1.FetchStrategy, error) {
	fs := v1alpha1.FetchStrategy{Type: v1alpha1.FetchAnonHTTP, AnonHTTP: &v1alpha1.AnonHTTPFetch{}}
	if len(s.FetchStrategy.Platforms) == 0 {
		if s.FetchStrategy.AnonHTTP == nil || s.FetchStrategy.AnonHTTP.Location == "" {
			return fs, errors.New("spec.fetchStrategy: neither platforms nor anonHttp.location")
		}
		loc := s.FetchStrategy.AnonHTTP.Location
		if err := checkLocation(loc); err != nil {
			return fs, fmt.Errorf("spec.fetchStrategy.anonHttp.location: %w", err)
		}
		fs.AnonHTTP.Location = loc
		c.note("spec.fetchStrategy.anonHttp has no sha256 (runtime-class-manager's anonHttp has none): add one to pin the artifact")
		return fs, nil
	}
	if s.FetchStrategy.AnonHTTP != nil && s.FetchStrategy.AnonHTTP.Location != "" {
		c.note("spec.fetchStrategy.anonHttp.location %s is left out: runtime-class-manager used platforms, which it also has, on every node", s.FetchStrategy.AnonHTTP.Location)
	}
	for i, p := range s.FetchStrategy.Platforms {
		field := fmt.Sprintf("spec.fetchStrategy.platforms[%d]", i)
		platform, err := platformOf(p.OS, p.Arch)
		if err != nil {
			return fs, fmt.Errorf("%s: %w", field, err)
		}
		if err := checkLocation(p.Location); err != nil {
			return fs, fmt.Errorf("%s.location: %w", field, err)
		}
		sum := strings.ToLower(p.SHA256)
		if sum != "" && !sha256Hex.MatchString(sum) {
			return fs, fmt.Errorf("%s.sha256 %q: not a hex SHA-256", field, p.SHA256)
		}
		if slices.ContainsFunc(fs.AnonHTTP.Platforms, func(q v1alpha1.PlatformArtifact) bool { return q.Platform == platform }) {
			c.note("%s (%s, %s) is left out: an earlier entry is for %s too, and runtime-class-manager used the first", field, p.Arch, p.Location, platform)
			continue
		}
		if sum == "" {
			c.note("%s (%s) has no sha256: add one to pin the artifact", field, platform)
		}
		fs.AnonHTTP.Platforms = append(fs.AnonHTTP.Platforms, v1alpha1.PlatformArtifact{Platform: platform, Location: p.Location, SHA256: sum})
	}
	return fs, nil
}

// platformOf maps runtime-class-manager's os and arch (Go's or uname's
// names, any case) to a shimkit platform.
func platformOf(os, arch string) (string, error) {
	if !strings.EqualFold(os, "linux") {
		return "", fmt.Errorf("os %q: shimkit installs on linux only", os)
	}
	switch strings.ToLower(arch) {
	case "amd64", "x86_64":
		return "linux/amd64", nil
	case "arm64", "aarch64":
		return "linux/arm64", nil
	}
	return "", fmt.Errorf("arch %q: want amd64, x86_64, arm64 or aarch64", arch)
}

func checkLocation(loc string) error {
	if !httpURL.MatchString(loc) || len(loc) > 2048 {
		return fmt.Errorf("%q: not an http(s) URL of at most 2048 characters", loc)
	}
	return nil
}

// rollout maps the rollout strategy: recreate (or none, which
// runtime-class-manager ran as recreate) and rolling.
func (c *converter) rollout(s spec) (*v1alpha1.RolloutStrategy, error) {
	switch rs := s.RolloutStrategy; rs.Type {
	case "", "recreate":
		return &v1alpha1.RolloutStrategy{Type: v1alpha1.RolloutRecreate}, nil
	case "rolling":
		n := 0
		if rs.Rolling != nil {
			n = rs.Rolling.MaxUpdate
		}
		if n < 1 {
			c.note("spec.rolloutStrategy.rolling.maxUpdate %d: 1 node at a time instead (runtime-class-manager never rolled out a rolling Shim)", n)
			n = 1
		}
		return &v1alpha1.RolloutStrategy{Type: v1alpha1.RolloutRolling, Rolling: &v1alpha1.RollingUpdate{MaxUpdate: ptr.To(intstr.FromInt(n))}}, nil
	default:
		return nil, fmt.Errorf("spec.rolloutStrategy.type %q: want recreate or rolling", rs.Type)
	}
}

// runtimeOptions maps containerdRuntimeOptions, which runtime-class-manager
// wrote into the handler's options table as raw TOML (key = value), to
// runtimeOptions: each value read as the TOML value containerd read.
func runtimeOptions(opts map[string]string) (*runtime.RawExtension, error) {
	if len(opts) == 0 {
		return nil, nil
	}
	out := map[string]any{}
	for k, v := range opts {
		field := "spec.containerdRuntimeOptions." + k
		if !bareKey.MatchString(k) {
			return nil, fmt.Errorf("%s: not a bare TOML key, so containerd did not read it as one option", field)
		}
		if strings.ContainsAny(v, "\r\n") {
			return nil, fmt.Errorf("%s: %q spans lines, so containerd did not read it as one value", field, v)
		}
		var doc map[string]any
		if err := toml.Unmarshal([]byte("v = "+v+"\n"), &doc); err != nil || len(doc) != 1 {
			return nil, fmt.Errorf("%s: %q is not a TOML value (runtime-class-manager wrote it unquoted: a string must be quoted, as \"\\\"value\\\"\")", field, v)
		}
		val, err := jsonValue(doc["v"])
		if err != nil {
			return nil, fmt.Errorf("%s: %q: %w", field, v, err)
		}
		out[k] = val
	}
	data, err := json.Marshal(out)
	if err != nil {
		return nil, err
	}
	return &runtime.RawExtension{Raw: data}, nil
}

// jsonValue checks that a TOML value has a JSON equivalent: no dates or
// times, no infinite or NaN number.
func jsonValue(v any) (any, error) {
	switch v := v.(type) {
	case string, bool, int64:
		return v, nil
	case float64:
		if math.IsInf(v, 0) || math.IsNaN(v) {
			return nil, errors.New("inf and nan have no JSON equivalent")
		}
		return v, nil
	case []any:
		for i, e := range v {
			var err error
			if v[i], err = jsonValue(e); err != nil {
				return nil, err
			}
		}
		return v, nil
	case map[string]any:
		for k, e := range v {
			var err error
			if v[k], err = jsonValue(e); err != nil {
				return nil, err
			}
		}
		return v, nil
	}
	return nil, fmt.Errorf("a TOML %T has no JSON equivalent", v)
}

// binary sets what makes the handler run the binary runtime-class-manager
// installed: its artifact holds containerd-shim-<name>. A name ending in
// -v<N> (spin-v2) is the binary of runtime type io.containerd.<rest>.v<N>,
// shimkit's default bundle file; another (wasmtime) is taken as a file of
// that name, the handler's runtime path, under runtime type
// io.containerd.<name>.v1.
func (c *converter) binary(s *v1alpha1.ShimSpec) {
	if m := versioned.FindStringSubmatch(c.name); m != nil {
		s.RuntimeType = "io.containerd." + m[1] + ".v" + m[2]
		return
	}
	bin := "containerd-shim-" + c.name
	s.RuntimeType = "io.containerd." + c.name + ".v1"
	s.Files = []v1alpha1.BundleFile{{Path: bin, Mode: ptr.To[int32](0o755)}}
	s.RuntimePath = plan.BundleDirPlaceholder + "/" + bin
}

// check builds the Shim's install plan for a node of every platform it
// has an artifact for, as runtime-class-manager left the node: each must
// be valid, migrate the handler, and run containerd-shim-<name> of the
// bundle.
func check(shim *v1alpha1.Shim) error {
	platforms := []string{"linux/amd64", "linux/arm64"}
	if ps := shim.Spec.FetchStrategy.AnonHTTP.Platforms; len(ps) > 0 {
		platforms = nil
		for _, p := range ps {
			platforms = append(platforms, p.Platform)
		}
	}
	for _, platform := range platforms {
		node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node", Labels: map[string]string{
			corev1.LabelArchStable: strings.TrimPrefix(platform, "linux/"),
			shim.Name:              "provisioned",
		}}}
		p, err := operator.BuildPlan(shim, node, plan.OpInstall, operator.Options{})
		if err != nil {
			return err
		}
		want := plan.BundleDirPlaceholder + "/containerd-shim-" + shim.Name
		switch h := p.Handlers[0]; {
		case p.Migrate == nil || p.Migrate.Handler != shim.Name:
			return fmt.Errorf("the plan for %s does not migrate handler %s", platform, shim.Name)
		case h.RuntimePath != want:
			return fmt.Errorf("the plan for %s runs %q, not %s", platform, h.RuntimePath, want)
		}
	}
	return nil
}
