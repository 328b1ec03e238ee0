package record_test

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/shimkit/shimkit/internal/nodelabel/record"
)

func TestKeyIsValidAndDistinct(t *testing.T) {
	long1 := strings.Repeat("a", 100) + "-one"
	long2 := strings.Repeat("a", 100) + "-two"
	for _, name := range []string{"spin", "wasmtime-spin-v2", long1, long2, strings.Repeat("x.", 40) + "y"} {
		for _, k := range []string{record.Key(name), record.FailureKey(name), record.VerifiedKey(name)} {
			if errs := validation.IsQualifiedName(k); len(errs) > 0 {
				t.Errorf("key %q of %q is not a valid label or annotation key: %v", k, name, errs)
			}
		}
	}
	if record.Key(long1) == record.Key(long2) {
		t.Error("long names collide")
	}
	if record.Key("spin") != "shim.containerd.x-k8s.io/spin" {
		t.Error(record.Key("spin"))
	}
}

// TestRecordsOf reads a node's records for one Shim object: its own, a
// predecessor's of the same name (stale, or the owner of the label), ones
// written before records named their Shim, and ones that do not parse.
func TestRecordsOf(t *testing.T) {
	const uid = "uid-now"
	failure := func(uid string) string {
		return `{"shimUID":"` + uid + `","op":"install","specHash":"h1","reason":"Conflict","time":"2026-11-25T06:00:00Z"}`
	}
	verified := func(uid string) string {
		return `{"shimUID":"` + uid + `","specHash":"h1","time":"2026-11-25T06:00:00Z"}`
	}
	on := func(record, machine string) string {
		return strings.TrimSuffix(record, "}") + `,"machine":"` + machine + `"}`
	}
	type got struct {
		Failure, Verification, LabelledByOther, Reimaged, Unrecorded bool
		Stale                                                        []string
	}
	for _, tc := range []struct {
		name        string
		labelled    bool
		machine     string // the node's machine ID now
		annotations map[string]string
		want        got
	}{
		{name: "recorded on this machine", labelled: true, machine: "m2", annotations: map[string]string{record.FailureKey("spin"): on(failure(uid), "m2"), record.VerifiedKey("spin"): on(verified(uid), "m2")},
			want: got{Failure: true, Verification: true}},
		{name: "reimaged: the label and records of the old machine", labelled: true, machine: "m2", annotations: map[string]string{record.FailureKey("spin"): on(failure(uid), "m1"), record.VerifiedKey("spin"): on(verified(uid), "m1")},
			want: got{Reimaged: true, Stale: []string{record.FailureKey("spin"), record.VerifiedKey("spin")}}},
		{name: "reimaged, not labelled: the records are stale", machine: "m2", annotations: map[string]string{record.VerifiedKey("spin"): on(verified(uid), "m1")},
			want: got{Stale: []string{record.VerifiedKey("spin")}}},
		{name: "records naming no machine are the node's", labelled: true, machine: "m2", annotations: map[string]string{record.VerifiedKey("spin"): verified(uid)},
			want: got{Verification: true}},
		{name: "a node reporting no machine keeps its records", labelled: true, annotations: map[string]string{record.VerifiedKey("spin"): on(verified(uid), "m1")},
			want: got{Verification: true}},
		{name: "nothing"},
		{name: "a label with no record is no Shim's (a node pool declared it)", labelled: true, want: got{Unrecorded: true}},
		{name: "a label and a hash copied from another node, no record", labelled: true, annotations: map[string]string{record.Key("spin"): "h1"}, want: got{Unrecorded: true}},
		{name: "its own", labelled: true, annotations: map[string]string{record.FailureKey("spin"): failure(uid), record.VerifiedKey("spin"): verified(uid)},
			want: got{Failure: true, Verification: true}},
		{name: "a predecessor's failure is stale", annotations: map[string]string{record.FailureKey("spin"): failure("uid-old")},
			want: got{Stale: []string{record.FailureKey("spin")}}},
		{name: "a failure naming no Shim is stale", annotations: map[string]string{record.FailureKey("spin"): failure("")},
			want: got{Stale: []string{record.FailureKey("spin")}}},
		{name: "a predecessor's verification without its label is stale", annotations: map[string]string{record.VerifiedKey("spin"): verified("uid-old")},
			want: got{Stale: []string{record.VerifiedKey("spin")}}},
		{name: "a predecessor's verification with its label owns the label", labelled: true, annotations: map[string]string{record.VerifiedKey("spin"): verified("uid-old")},
			want: got{LabelledByOther: true}},
		{name: "a verification naming no Shim is the Shim's", labelled: true, annotations: map[string]string{record.VerifiedKey("spin"): verified("")},
			want: got{Verification: true}},
		{name: "records that do not parse are nobody's", annotations: map[string]string{record.FailureKey("spin"): "{", record.VerifiedKey("spin"): `{"specHash":"h1"}`}},
		{name: "another shim's records", annotations: map[string]string{record.FailureKey("wasm"): failure(uid)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Annotations: tc.annotations}}
			node.Status.NodeInfo.MachineID = tc.machine
			if tc.labelled {
				node.Labels = map[string]string{record.Key("spin"): record.Installed}
			}
			r := record.RecordsOf(node, "spin", uid)
			g := got{Failure: r.Failure != nil, Verification: r.Verification != nil, LabelledByOther: r.LabelledByOther, Reimaged: r.Reimaged, Unrecorded: r.Unrecorded, Stale: r.Stale}
			if d := cmp.Diff(tc.want, g); d != "" {
				t.Errorf("RecordsOf (-want +got):\n%s", d)
			}
			if (record.FailureOf(node, "spin", uid) != nil) != tc.want.Failure || (record.VerificationOf(node, "spin", uid) != nil) != tc.want.Verification {
				t.Error("FailureOf or VerificationOf disagree with RecordsOf")
			}
			_, failed := tc.annotations[record.FailureKey("spin")]
			_, verified := tc.annotations[record.VerifiedKey("spin")]
			if has := record.HasAny(node, "spin"); has != (tc.labelled || failed || verified) {
				t.Errorf("HasAny = %v", has)
			}
		})
	}
}

// TestRebooted: a record of an earlier boot than the node's now; a
// record or a node naming none is of this boot.
func TestRebooted(t *testing.T) {
	node := func(boot string) *corev1.Node {
		return &corev1.Node{Status: corev1.NodeStatus{NodeInfo: corev1.NodeSystemInfo{BootID: boot}}}
	}
	for _, tc := range []struct {
		recorded, now string
		want          bool
	}{
		{"b1", "b2", true},
		{"b1", "b1", false},
		{"", "b2", false},
		{"b1", "", false},
	} {
		if got := record.Rebooted(tc.recorded, node(tc.now)); got != tc.want {
			t.Errorf("Rebooted(%q) on a node in boot %q = %v, want %v", tc.recorded, tc.now, got, tc.want)
		}
	}
}
