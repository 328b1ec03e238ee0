package plan_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/shimkit/shimkit/installer/plan"
)

// listPlans are two Shims' plans for one node.
func listPlans() []*plan.NodePlan {
	g, k := gvisorPlan(), sandboxerPlan()
	k.Node = g.Node
	return []*plan.NodePlan{g, k}
}

// TestListGolden pins the wire format of a NodePlanList, and that
// DecodePlans reads it back, and reads a single NodePlan as a list of one.
func TestListGolden(t *testing.T) {
	data, err := plan.EncodeList(plan.NewList(listPlans()...))
	if err != nil {
		t.Fatal(err)
	}
	want := assertGolden(t, "list.json", data)
	back, err := plan.DecodePlans(want)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(listPlans(), back); diff != "" {
		t.Errorf("round trip (-want +got):\n%s", diff)
	}
	one, err := plan.DecodePlans(mustEncode(t, gvisorPlan()))
	if err != nil || len(one) != 1 || one[0].Shim.Name != "gvisor" {
		t.Errorf("a NodePlan: %v, %v", one, err)
	}
}

func mustEncode(t *testing.T, p *plan.NodePlan) []byte {
	t.Helper()
	data, err := plan.Encode(p)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// TestListRefuses: a list that one installer run cannot carry out is
// refused, naming the item and field.
func TestListRefuses(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(l *plan.NodePlanList)
		err    error
		want   string
	}{
		{"empty", func(l *plan.NodePlanList) { l.Items = nil }, plan.ErrInvalid, "at least one plan"},
		{"other kind", func(l *plan.NodePlanList) { l.Kind = "NodePlans" }, plan.ErrVersion, "NodePlans"},
		{"uninstall", func(l *plan.NodePlanList) { l.Items[1] = *plan.New(plan.ShimRef{Name: "spin"}, plan.OpUninstall) }, plan.ErrInvalid, "items[1].operation"},
		{"verify", func(l *plan.NodePlanList) { l.Items[0].Operation = plan.OpVerify }, plan.ErrInvalid, `items[0].operation: "verify"`},
		{"two nodes", func(l *plan.NodePlanList) { l.Items[1].Node = "node-2" }, plan.ErrInvalid, "items[1].node"},
		{"same Shim", func(l *plan.NodePlanList) { l.Items[1].Shim.Name = "gvisor" }, plan.ErrInvalid, "items[1].shim.name"},
		{"invalid item", func(l *plan.NodePlanList) { l.Items[1].Handlers[0].RuntimeType = "runc" }, plan.ErrInvalid, "items[1]: "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := plan.NewList(listPlans()...)
			tc.change(l)
			err := l.Validate()
			if !errors.Is(err, tc.err) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want %v naming %q", err, tc.err, tc.want)
			}
			// The same list as a document is refused by DecodePlans.
			data, merr := jsonOf(l)
			if merr != nil {
				t.Fatal(merr)
			}
			if _, err := plan.DecodePlans(data); err == nil {
				t.Error("DecodePlans accepted it")
			}
		})
	}
}

// TestResultsFitTerminationMessage: three Shims' results with long
// messages and file lists fit the kubelet's 4096 bytes, keeping every
// outcome, reason and digest; DecodeResults reads a list and a single
// result alike.
func TestResultsFitTerminationMessage(t *testing.T) {
	var rs []*plan.NodeResult
	for k, name := range []string{"gvisor", "kata", "spin"} {
		p := gvisorPlan()
		p.Shim.Name = name
		r := plan.NewResult(p)
		r.Outcome, r.Reason, r.Digest = plan.RolledBack, plan.ReasonSiblingFailed, "sha256:"+strings.Repeat("cd", 32)
		if k == 1 {
			r.Reason = plan.ReasonCanaryFailed
		}
		r.Message = strings.Repeat("canary pod shimkit-canary ünexpected exit ", 100)
		for range 100 {
			r.Files = append(r.Files, "/opt/shimkit/"+name+"/0123456789abcdef/file")
		}
		rs = append(rs, r)
	}
	data, err := plan.EncodeResults(rs, plan.MaxTerminationMessage)
	if err != nil {
		t.Fatal(err)
	}
	if len(data) > plan.MaxTerminationMessage {
		t.Fatalf("%d bytes", len(data))
	}
	back, err := plan.DecodeResults(data)
	if err != nil {
		t.Fatal(err)
	}
	if len(back) != 3 {
		t.Fatalf("%d results", len(back))
	}
	for k, r := range back {
		if r.Shim.Name != rs[k].Shim.Name || r.Outcome != plan.RolledBack || r.Reason != rs[k].Reason || r.Digest != rs[k].Digest || !strings.HasPrefix(r.Message, "canary pod") {
			t.Errorf("item %d lost what matters: %+v", k, r)
		}
	}
	single, err := plan.EncodeResult(rs[1], plan.MaxTerminationMessage)
	if err != nil {
		t.Fatal(err)
	}
	if one, err := plan.DecodeResults(single); err != nil || len(one) != 1 || one[0].Reason != plan.ReasonCanaryFailed {
		t.Errorf("a NodeResult: %v, %v", one, err)
	}
	bad := bytes.Replace(data, []byte(`"outcome":"RolledBack"`), []byte(`"outcome":"Maybe"`), 1)
	if _, err := plan.DecodeResults(bad); !errors.Is(err, plan.ErrInvalid) || !strings.Contains(err.Error(), "items[0]") {
		t.Errorf("unknown outcome: %v", err)
	}
}

// FuzzDecodePlans: DecodePlans never panics, and whatever list it accepts
// encodes and decodes to the same plans.
func FuzzDecodePlans(f *testing.F) {
	data, _ := plan.EncodeList(plan.NewList(listPlans()...))
	f.Add(data)
	f.Add([]byte(`{"apiVersion":"installer.shimkit.dev/v1alpha1","kind":"NodePlanList","items":[]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		ps, err := plan.DecodePlans(data)
		if err != nil {
			return
		}
		out, err := plan.EncodeList(plan.NewList(ps...))
		if len(ps) == 1 && ps[0].Operation != plan.OpInstall {
			return // a single uninstall plan is not a list
		}
		if err != nil {
			t.Fatalf("accepted plans do not encode as a list: %v", err)
		}
		back, err := plan.DecodePlans(out)
		if err != nil {
			t.Fatalf("re-decode: %v", err)
		}
		if diff := cmp.Diff(ps, back); diff != "" {
			t.Fatal(diff)
		}
	})
}

func jsonOf(l *plan.NodePlanList) ([]byte, error) { return json.Marshal(l) }
