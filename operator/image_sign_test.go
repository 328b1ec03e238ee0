package operator_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shimkit/shimkit/internal/testutil"
	"github.com/shimkit/shimkit/internal/testutil/signtest"
	"github.com/shimkit/shimkit/operator/api/v1alpha1"
)

// TestVerifiedImages is TestVerifiedArtifacts for Shims of
// fetchStrategy.type image: with spec.verification, only an image signed
// by the given key (a sigstore bundle or a cosign legacy signature) rolls
// out, every node pulling it at the digest verified, and the signer shows
// in the status; an unsigned image (SignatureMissing) and one signed by
// another key (SignatureInvalid) are refused before any node is touched:
// no Job.
func TestVerifiedImages(t *testing.T) {
	env := startCluster(t)
	reg := testutil.StartRegistry(t, "", "")
	trusted, other := signtest.NewSigningKey(t), signtest.NewSigningKey(t)
	push := func(tag string) (ref, digest string) { // each tag an image of its own (and digest)
		d := reg.PushImage(t, "shims/signedimg", tag, map[string][]byte{
			"containerd-shim-signedimg-v2": []byte("#!/bin/sh\n"), "TAG": []byte(tag + "\n"),
		})
		return reg.Host + "/shims/signedimg:" + tag, d
	}
	signed, signedD := push("signed")
	legacy, legacyD := push("legacy")
	unsigned, _ := push("unsigned")
	wrong, _ := push("wrong")
	trusted.SignOCI(t, signed)
	trusted.SignOCILegacy(t, legacy)
	other.SignOCI(t, wrong)

	pulls := &imagePulls{}
	startFleetRunning(t, env, 1, pulls.runner(t))
	startOperator(t, env)
	keys := &v1alpha1.Verification{PublicKeys: []string{string(trusted.PublicKeyPEM())}}
	image := func(ref string) v1alpha1.FetchStrategy {
		return v1alpha1.FetchStrategy{Type: v1alpha1.FetchImage, Image: &v1alpha1.OCIFetch{Reference: ref, PlainHTTP: true}}
	}
	tests := []struct {
		name   string
		ref    string
		digest string // of a signed image
		reason string // "" installs
	}{
		{"image-bundle", signed, signedD, ""},
		{"image-legacy", legacy, legacyD, ""},
		{"image-unsigned", unsigned, "", v1alpha1.ReasonSignatureMissing},
		{"image-other-key", wrong, "", v1alpha1.ReasonSignatureInvalid},
	}
	for _, tt := range tests {
		s := pinShim(tt.name, image(tt.ref))
		s.Spec.Verification = keys
		if err := env.Client.Create(context.Background(), s); err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.reason == "" {
				s := readyAt(t, env.Client, tt.name, tt.digest)
				if by := s.Status.Artifact.VerifiedBy; !strings.HasPrefix(by, "key sha256:") {
					t.Errorf("status.artifact.verifiedBy = %q", by)
				}
				// Shims of one node may share its Job: look in every Job.
				jobs := &batchv1.JobList{}
				if err := env.Client.List(context.Background(), jobs, client.InNamespace(jobNamespace)); err != nil {
					t.Fatal(err)
				}
				want := reg.Host + "/shims/signedimg@" + tt.digest
				if !slices.ContainsFunc(jobs.Items, func(j batchv1.Job) bool { return slices.Contains(podImages(j.Spec.Template.Spec), want) }) {
					t.Errorf("no Job pulls the verified %s", want)
				}
				return
			}
			waitFor(t, 30*time.Second, tt.reason, func() (bool, string) {
				c := condition(getShim(t, env.Client, tt.name), v1alpha1.ConditionDegraded)
				if c == nil {
					return false, "no Degraded"
				}
				return c.Reason == tt.reason, c.Reason + ": " + c.Message
			})
			if n := len(jobsOf(t, env.Client, tt.name)); n != 0 {
				t.Errorf("%d Jobs for a refused image", n)
			}
		})
	}
}
