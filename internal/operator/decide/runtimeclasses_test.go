package decide

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/shimkit/shimkit/internal/operator/shimspec"
	"github.com/shimkit/shimkit/nodelabel"
	"github.com/shimkit/shimkit/operator/api/v1alpha1"
	"github.com/shimkit/shimkit/runtimeclass"
)

const classShimUID = types.UID("11111111-1111-4111-8111-111111111111")

func classShim(canary bool) *v1alpha1.Shim {
	s := &v1alpha1.Shim{ObjectMeta: metav1.ObjectMeta{Name: "spin", UID: classShimUID},
		Spec: v1alpha1.ShimSpec{RuntimeClass: v1alpha1.RuntimeClassSpec{Name: "wasmtime-spin", Handler: "spin"}}}
	if !canary {
		s.Spec.Canary = &v1alpha1.Canary{Enabled: new(false)}
	}
	return s
}

// ownedClass is a RuntimeClass the Shim controls, as Decide builds it.
func ownedClass(shim *v1alpha1.Shim, name string) *nodev1.RuntimeClass {
	for _, c := range shimspec.Classes(shim) {
		if c.Name == name {
			return runtimeclass.Build(c.Spec)
		}
	}
	if c, ok := shimspec.CanaryClass(shim); ok && c.Name == name {
		return runtimeclass.Build(c.Spec)
	}
	rc := runtimeclass.Build(shimspec.Classes(shim)[0].Spec)
	rc.Name = name
	return rc
}

// controlledBy is a RuntimeClass another object controls.
func controlledBy(name, handler, apiVersion, kind, owner string, uid types.UID) *nodev1.RuntimeClass {
	return &nodev1.RuntimeClass{ObjectMeta: metav1.ObjectMeta{Name: name, ResourceVersion: "7", OwnerReferences: []metav1.OwnerReference{{
		APIVersion: apiVersion, Kind: kind, Name: owner, UID: uid, Controller: new(true)}}}, Handler: handler}
}

func classSnapshot(shim *v1alpha1.Shim, installed bool, classes ...*nodev1.RuntimeClass) *Snapshot {
	set := &ClassSet{}
	for _, c := range shimspec.Classes(shim) {
		set.Put(c.Name, nil)
	}
	set.Put(shimspec.CanaryRuntimeClass(shim.Name), nil)
	for _, rc := range classes {
		set.Put(rc.Name, rc)
	}
	v := NodeView{Node: &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}}}
	if installed {
		v.Label = nodelabel.Installed
	}
	return &Snapshot{Shim: shim, Classes: set, Views: []NodeView{v}, RCMUID: "rcm-uid"}
}

// describeClasses is the plan as "op name" lines.
func describeClasses(p ClassPlan) []string {
	var out []string
	for _, t := range p.Takeovers {
		out = append(out, "take over "+t.Spec.Name)
	}
	for _, d := range p.Deletes {
		out = append(out, "delete "+d.Class.Name)
	}
	for _, e := range p.Ensures {
		out = append(out, string(e.Step.Result)+" "+e.Spec.Name)
	}
	for _, w := range p.Warnings {
		out = append(out, "conflict "+w.Class.Name)
	}
	return out
}

func TestDecideClasses(t *testing.T) {
	migrating := classShim(false)
	migrating.Spec.MigrateFrom = &v1alpha1.MigrateFrom{RuntimeClassManager: v1alpha1.RuntimeClassManagerShim{Shim: "spin"}}
	rcmAPI := v1alpha1.RCMGroup + "/v1alpha1"
	for _, tc := range []struct {
		name          string
		obs           *Snapshot
		starting      bool
		want          []string
		published     bool
		canaryBlocked bool
		conflict      string // a substring of the one conflict
	}{
		{name: "no node has the shim: nothing created", obs: classSnapshot(classShim(false), false),
			want: []string{"Absent wasmtime-spin"}},
		{name: "a node has it: created", obs: classSnapshot(classShim(false), true),
			want: []string{"Created wasmtime-spin"}, published: true},
		{name: "ours, up to date", obs: classSnapshot(classShim(false), true, ownedClass(classShim(false), "wasmtime-spin")),
			want: []string{"Unchanged wasmtime-spin"}, published: true},
		{name: "someone else's: left as it is", obs: classSnapshot(classShim(false), true, &nodev1.RuntimeClass{ObjectMeta: metav1.ObjectMeta{Name: "wasmtime-spin"}, Handler: "spin"}),
			want: []string{"conflict wasmtime-spin"}, conflict: "does not belong to this Shim"},
		{name: "ours, dropped from the spec: deleted", obs: classSnapshot(classShim(false), true, ownedClass(classShim(false), "old-name")),
			want: []string{"delete old-name", "Created wasmtime-spin"}, published: true},
		{name: "the canary's, while starting", obs: classSnapshot(classShim(true), false), starting: true,
			want: []string{"Absent wasmtime-spin", "Created shimkit-canary-spin"}},
		{name: "the canary's, someone else's: no install starts", starting: true,
			obs:  classSnapshot(classShim(true), false, &nodev1.RuntimeClass{ObjectMeta: metav1.ObjectMeta{Name: "shimkit-canary-spin"}, Handler: "spin"}),
			want: []string{"Absent wasmtime-spin", "conflict shimkit-canary-spin"}, canaryBlocked: true, conflict: "the canary's"},
		{name: "the canary's, no installer will run it: deleted", obs: classSnapshot(classShim(true), false, ownedClass(classShim(true), "shimkit-canary-spin")),
			want: []string{"delete shimkit-canary-spin", "Absent wasmtime-spin"}},
		{name: "the canary's, while a node has the shim: kept", obs: classSnapshot(classShim(true), true, ownedClass(classShim(true), "shimkit-canary-spin")),
			want: []string{"Created wasmtime-spin", "Unchanged shimkit-canary-spin"}, published: true},
		{name: "runtime-class-manager's: taken over, then ours", obs: classSnapshot(migrating, true, controlledBy("wasmtime-spin", "spin", rcmAPI, "Shim", "spin", "rcm-uid")),
			want: []string{"take over wasmtime-spin", "Unchanged wasmtime-spin"}, published: true},
		{name: "runtime-class-manager's of another handler: not taken over", obs: classSnapshot(migrating, true, controlledBy("wasmtime-spin", "other", rcmAPI, "Shim", "spin", "rcm-uid")),
			want: []string{"conflict wasmtime-spin"}, conflict: "its handler is other, not spin"},
		{name: "another UID of runtime-class-manager's name: not taken over", obs: classSnapshot(migrating, true, controlledBy("wasmtime-spin", "spin", rcmAPI, "Shim", "spin", "another-uid")),
			want: []string{"conflict wasmtime-spin"}, conflict: "not that Shim of UID rcm-uid"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := Classes(tc.obs, tc.starting)
			got := describeClasses(p)
			if strings.Join(got, "; ") != strings.Join(tc.want, "; ") {
				t.Errorf("plan %q, want %q", got, tc.want)
			}
			if p.Published != tc.published || p.CanaryBlocked != tc.canaryBlocked {
				t.Errorf("published %v, canary blocked %v; want %v, %v", p.Published, p.CanaryBlocked, tc.published, tc.canaryBlocked)
			}
			if tc.conflict != "" && (len(p.Conflicts) != 1 || !strings.Contains(p.Conflicts[0], tc.conflict)) {
				t.Errorf("conflicts %q, want one with %q", p.Conflicts, tc.conflict)
			}
			for _, e := range append(p.Ensures, p.Takeovers...) {
				if w := e.Step.Write; w != nil && e.Step.Read != nil && w.ResourceVersion != e.Step.Read.ResourceVersion {
					t.Errorf("%s: written without the resourceVersion read", e.Spec.Name)
				}
			}
		})
	}
}

// TestFenceClasses: a deleted Shim's own RuntimeClasses come to select
// LabelFenced (updated, never replaced); one fenced already, another's,
// one absent and the canary's are not written.
func TestFenceClasses(t *testing.T) {
	shim := classShim(true)
	fenced := ownedClass(shim, "wasmtime-spin")
	fenced.Scheduling.NodeSelector = map[string]string{nodelabel.Key("spin"): LabelFenced}
	canary := ownedClass(shim, shimspec.CanaryRuntimeClass("spin"))
	for _, tc := range []struct {
		name  string
		class *nodev1.RuntimeClass
		want  bool
	}{
		{"the Shim's, published", ownedClass(shim, "wasmtime-spin"), true},
		{"fenced already", fenced, false},
		{"someone else's", controlledBy("wasmtime-spin", "spin", "example.com/v1", "Other", "other", "uid-other"), false},
		{"absent", nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var classes []*nodev1.RuntimeClass
			if tc.class != nil {
				classes = append(classes, tc.class)
			}
			obs := classSnapshot(shim, true, append(classes, canary)...)
			steps := FenceClasses(obs)
			if got := len(steps) == 1; got != tc.want {
				t.Fatalf("steps %+v, want a fence: %v", steps, tc.want)
			}
			if !tc.want {
				return
			}
			w := steps[0].Step.Write
			if steps[0].Step.Result != runtimeclass.Updated || w.Name != "wasmtime-spin" || w.Handler != "spin" ||
				len(w.Scheduling.NodeSelector) != 1 || w.Scheduling.NodeSelector[nodelabel.Key("spin")] != LabelFenced {
				t.Errorf("fence %s %+v, want wasmtime-spin updated to select %s", steps[0].Step.Result, w, LabelFenced)
			}
			if tc.class.Scheduling.NodeSelector[nodelabel.Key("spin")] != nodelabel.Installed {
				t.Error("the RuntimeClass read was changed")
			}
		})
	}
	if FenceClasses(&Snapshot{Shim: shim}) != nil {
		t.Error("a snapshot with no classes read is fenced")
	}
}
