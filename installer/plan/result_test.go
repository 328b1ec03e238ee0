package plan_test

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/shimkit/shimkit/installer/plan"
)

// verifyResult is what an installer reports for verifyPlan on a node that
// drifted: a changed file, a handler config management removed.
func verifyResult() *plan.NodeResult {
	r := plan.NewResult(verifyPlan())
	r.Outcome, r.Digest = plan.Succeeded, "sha256:"+strings.Repeat("ab", 32)
	r.Files = []string{"/opt/shimkit/gvisor/0123456789abcdef/runsc"}
	r.Drift = []string{
		"file /opt/shimkit/gvisor/0123456789abcdef/runsc was changed (sha256:" + strings.Repeat("ab", 32) + " recorded, sha256:" + strings.Repeat("cd", 32) + " found)",
		"handler runsc is not in containerd's config",
	}
	r.Duration = plan.Duration(12 * time.Millisecond)
	return r
}

// TestResultGolden pins the wire format of a verify's result, drift
// included: the operator of another build reads it.
func TestResultGolden(t *testing.T) {
	r := verifyResult()
	data, err := plan.EncodeResult(r, plan.MaxTerminationMessage)
	if err != nil {
		t.Fatal(err)
	}
	data = append(data, '\n')
	want := assertGolden(t, "verify-result.json", data)
	back, err := plan.DecodeResult(bytes.TrimSpace(want))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(r, back); diff != "" {
		t.Errorf("round trip (-want +got):\n%s", diff)
	}
}

// TestDriftIsShortened: a verify that found hundreds of mismatches still
// fits the termination message; the first entries are kept, the last
// says how many more there were, and the outcome, digest and message
// survive. In a list, the longest drift is shortened first.
func TestDriftIsShortened(t *testing.T) {
	r := verifyResult()
	r.Message = "verified in 12ms"
	r.Drift = nil
	for k := range 300 {
		r.Drift = append(r.Drift, fmt.Sprintf("file /opt/shimkit/gvisor/0123456789abcdef/lib/%03d.so is missing", k))
	}
	for range 50 {
		r.Files = append(r.Files, "/opt/shimkit/gvisor/0123456789abcdef/lib/x.so")
	}
	data, err := plan.EncodeResult(r, plan.MaxTerminationMessage)
	if err != nil {
		t.Fatal(err)
	}
	if len(data) > plan.MaxTerminationMessage {
		t.Fatalf("%d bytes", len(data))
	}
	back, err := plan.DecodeResult(data)
	if err != nil {
		t.Fatal(err)
	}
	checkDrift(t, back, r)
	if len(back.Files) != 0 || back.Message != r.Message {
		t.Errorf("the file list goes first, the message last: %d files, message %q", len(back.Files), back.Message)
	}

	small := verifyResult()
	small.Shim.Name = "small"
	list, err := plan.EncodeResults([]*plan.NodeResult{small, r}, plan.MaxTerminationMessage)
	if err != nil {
		t.Fatal(err)
	}
	if len(list) > plan.MaxTerminationMessage {
		t.Fatalf("list: %d bytes", len(list))
	}
	rs, err := plan.DecodeResults(list)
	if err != nil || len(rs) != 2 {
		t.Fatalf("list: %v %v", rs, err)
	}
	if diff := cmp.Diff(small.Drift, rs[0].Drift); diff != "" {
		t.Errorf("the short drift was shortened too:\n%s", diff)
	}
	checkDrift(t, rs[1], r)
}

// checkDrift checks that got's drift is a shortened want's: its first
// entries, then "… and N more" with N the entries left out.
func checkDrift(t *testing.T, got, want *plan.NodeResult) {
	t.Helper()
	if got.Outcome != want.Outcome || got.Digest != want.Digest || got.Operation != plan.OpVerify {
		t.Errorf("lost what matters: %+v", got)
	}
	n := len(got.Drift) - 1
	if n < 1 || n >= len(want.Drift) {
		t.Fatalf("drift of %d entries kept of %d", n, len(want.Drift))
	}
	if diff := cmp.Diff(want.Drift[:n], got.Drift[:n]); diff != "" {
		t.Errorf("not the first entries:\n%s", diff)
	}
	if last, more := got.Drift[n], fmt.Sprintf("… and %d more", len(want.Drift)-n); last != more {
		t.Errorf("last entry %q, want %q", last, more)
	}
}

// FuzzEncodeResult: whatever a result holds, EncodeResult's output fits
// (or it says why not), decodes, and keeps the outcome, reason and digest.
func FuzzEncodeResult(f *testing.F) {
	f.Add("file /opt/shimkit/x is missing", 40, "a message", 10, 4096)
	f.Add("ü", 3000, strings.Repeat("é", 2000), 0, 1024)
	f.Add("", 0, "", 0, 300)
	f.Fuzz(func(t *testing.T, entry string, entries int, message string, files int, maxBytes int) {
		if entries < 0 || entries > 1000 || files < 0 || files > 1000 || maxBytes < 0 || maxBytes > 1<<20 {
			return
		}
		r := verifyResult()
		r.Reason, r.Message, r.Drift, r.Files = plan.ReasonNodeError, message, nil, nil
		for k := range entries {
			r.Drift = append(r.Drift, fmt.Sprintf("%s %d", entry, k))
		}
		for range files {
			r.Files = append(r.Files, "/opt/shimkit/gvisor/0123456789abcdef/file")
		}
		data, err := plan.EncodeResult(r, maxBytes)
		if err != nil {
			return // too small for even the outcome: said so
		}
		if len(data) > maxBytes {
			t.Fatalf("%d bytes, limit %d", len(data), maxBytes)
		}
		back, err := plan.DecodeResult(data)
		if err != nil {
			t.Fatalf("does not decode: %v\n%s", err, data)
		}
		if back.Outcome != r.Outcome || back.Reason != r.Reason || back.Digest != r.Digest {
			t.Fatalf("lost what matters: %+v", back)
		}
		if len(back.Drift) > 0 && len(back.Drift) < len(r.Drift) && !strings.HasPrefix(back.Drift[len(back.Drift)-1], "… and ") {
			t.Fatalf("shortened drift does not say so: %q", back.Drift)
		}
	})
}

// TestPermanentReasons: the reasons whose refusal a retry of the same plan
// cannot change end a Job at once (FinalExitCodes); the others keep the
// Job's retries. Every reason is listed: a new one must be classified.
func TestPermanentReasons(t *testing.T) {
	for r, want := range map[plan.Reason]bool{
		plan.ReasonInvalidPlan: true, plan.ReasonUnauthorized: true, plan.ReasonDigestMismatch: true,
		plan.ReasonArtifactInvalid: true, plan.ReasonConfigInvalid: true, plan.ReasonConflict: true,
		plan.ReasonConfigNotEditable: true,
		plan.ReasonReserved:          true, plan.ReasonSignatureMissing: true, plan.ReasonSignatureInvalid: true,
		plan.ReasonInsecureTransport: true,
		plan.ReasonFetchFailed:       false, plan.ReasonConcurrentEdit: false, plan.ReasonUnitFailed: false,
		plan.ReasonRestartFailed: false, plan.ReasonNodeError: false, plan.ReasonInterrupted: false,
		plan.ReasonCanaryFailed: false, plan.ReasonSiblingFailed: false, plan.ReasonShimStuck: false,
	} {
		if got := r.Permanent(); got != want {
			t.Errorf("%s.Permanent() = %v, want %v", r, got, want)
		}
	}
	if got := plan.FinalExitCodes(); !slices.Equal(got, []int32{2, 3, 4, 5, 6}) || slices.Contains(got, plan.ExitFailed) {
		t.Errorf("FinalExitCodes() = %v", got)
	}
}

// hungResult is what an installer reports when containerd did not come
// back from its restart because a pod's shim was stopped.
func hungResult(shims int) *plan.NodeResult {
	r := plan.NewResult(verifyPlan())
	r.Operation, r.Outcome, r.Reason = plan.OpInstall, plan.RollbackFailed, plan.ReasonRestartFailed
	r.Hang = &plan.Hang{Unit: "containerd.service", ActiveState: "activating", SubState: "start"}
	for k := range shims {
		r.Hang.Shims = append(r.Hang.Shims, plan.StuckShim{PID: 4242 + k, Command: "containerd-shim-runc-v2", State: "T (stopped)",
			ID: fmt.Sprintf("%064d", k), Pod: fmt.Sprintf("default/web-%d", k)})
	}
	r.Message = "restart failed; on the node: " + r.Hang.String()
	return r
}

// TestHangResult pins the wire format of a hung restart's result, and
// shows a node with more stuck shims than the termination message holds:
// the first ones are kept, with how many there were.
func TestHangResult(t *testing.T) {
	r := hungResult(1)
	data, err := plan.EncodeResult(r, plan.MaxTerminationMessage)
	if err != nil {
		t.Fatal(err)
	}
	want := assertGolden(t, "hung-result.json", append(data, '\n'))
	back, err := plan.DecodeResult(bytes.TrimSpace(want))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(r, back); diff != "" {
		t.Errorf("round trip (-want +got):\n%s", diff)
	}

	many := hungResult(60)
	many.Message = "restart failed"
	data, err = plan.EncodeResult(many, plan.MaxTerminationMessage)
	if err != nil || len(data) > plan.MaxTerminationMessage {
		t.Fatalf("%d bytes: %v", len(data), err)
	}
	back, err = plan.DecodeResult(data)
	if err != nil {
		t.Fatal(err)
	}
	h := back.Hang
	if h == nil || h.ShimCount != 60 || len(h.Shims) == 0 || len(h.Shims) >= 60 || h.Shims[0] != many.Hang.Shims[0] || back.Message != many.Message {
		t.Errorf("shortened hang: %+v, message %q", h, back.Message)
	}
}
