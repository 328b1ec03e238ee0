package operator_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/opencontainers/go-digest"
	nodev1 "k8s.io/api/node/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shimkit/shimkit/fetch"
	"github.com/shimkit/shimkit/internal/testutil"
	"github.com/shimkit/shimkit/internal/testutil/signtest"
	"github.com/shimkit/shimkit/operator"
	"github.com/shimkit/shimkit/operator/api/v1alpha1"
)

// refusalResync is the operator's resync in the refusal tests: a refused
// Shim with a node to install is reconciled this often.
const refusalResync = 500 * time.Millisecond

// TestRefusedArtifactCosts: a Shim refused for its artifact (a real HTTP
// server and registry, artifacts signed as cosign does, a real API
// server) costs nothing while it stays refused, although it is reconciled
// every refusalResync:
//   - its artifact is downloaded at most once per spec (none when the
//     signature is missing: the signature is read first), its signature
//     read once, its registry asked nothing more;
//   - it has no canary RuntimeClass, and one it had from before is
//     deleted;
//   - its refusal is one Warning Event, and "signature not found" when
//     the signature URL answers 404;
//   - its status keeps showing the refusal.
//
// A change of the resolve annotation, the resolve interval or the spec
// resolves it again at once: one download each. A Shim that is not
// refused gets its canary RuntimeClass before its first Job, and keeps it
// once its nodes have the shim.
//
// Before the fix, over the same ~8 reconciles: every refused HTTP
// artifact was downloaded on each (also without a signature), every
// refused Shim had its canary RuntimeClass (a stale one was kept), and
// each refusal made two Warning Events (actions Resolve and Install).
func TestRefusedArtifactCosts(t *testing.T) {
	env := startCluster(t)
	ctx := context.Background()
	srv := testutil.StartFileServer(t)
	reg := testutil.StartRegistry(t, "", "")
	trusted, other := signtest.NewSigningKey(t), signtest.NewSigningKey(t)
	keys := &v1alpha1.Verification{PublicKeys: []string{string(trusted.PublicKeyPEM())}}

	// One artifact per Shim, so that each one's downloads count apart.
	artifact := func(name string) (url string, d digest.Digest) {
		a := testutil.NewShimArchive(t, "cost", "/bin/true", map[string]string{"NAME": name})
		return srv.Add("/"+name+".tar.gz", a.Data), digest.Digest("sha256:" + a.SHA256)
	}
	otherURL, otherD := artifact("other-key")
	srv.Add("/other-key.tar.gz.sig", other.DetachedSignature(t, otherD))
	srv.Add("/other-key-2.tar.gz.sig", other.DetachedSignature(t, otherD))
	tamperedURL, tamperedD := artifact("tampered")
	srv.Add("/tampered.tar.gz.sig", trusted.DetachedSignature(t, tamperedD))
	srv.Add("/tampered.tar.gz", []byte("not what was signed"))
	missingURL, _ := artifact("no-signature")
	staleURL, _ := artifact("stale-canary")
	goodURL, goodD := artifact("good")
	srv.Add("/good.tar.gz.sigstore.json", trusted.SignBlob(t, goodD))
	oci := func(tag string) v1alpha1.FetchStrategy {
		a := testutil.NewShimArchive(t, "cost", "/bin/true", map[string]string{"TAG": tag})
		reg.PushShim(t, "shims/"+tag, "v1", testutil.PlatformArtifact{MediaType: fetch.MediaTypeShimLayer, Data: a.Data})
		return v1alpha1.FetchStrategy{Type: v1alpha1.FetchOCI, OCI: &v1alpha1.OCIFetch{Reference: reg.Host + "/shims/" + tag + ":v1", PlainHTTP: true}}
	}
	ociOther, ociUnsigned := oci("oci-other"), oci("oci-unsigned")
	other.SignOCI(t, ociOther.OCI.Reference)
	web := func(url, sig string) v1alpha1.FetchStrategy {
		return v1alpha1.FetchStrategy{Type: v1alpha1.FetchAnonHTTP, AnonHTTP: &v1alpha1.AnonHTTPFetch{Location: url, Signature: sig}}
	}
	createNodes(t, env.Client, 1, map[string]string{"pin": "true"}, "pin")
	startKubelet(t, env, 100*time.Millisecond, nil)

	tests := []struct {
		name      string
		fetch     v1alpha1.FetchStrategy
		reason    string
		artifact  string // the artifact's path on srv
		downloads int64  // of the artifact, in all
		sigReads  int64  // of the signature's path, in all
		registry  string // the repository's path prefix on reg
		want      string // in the Degraded message
	}{
		{"cost-other-key", web(otherURL, srv.URL+"/other-key.tar.gz.sig"), v1alpha1.ReasonSignatureInvalid, "/other-key.tar.gz", 1, 1, "", "signature does not verify"},
		{"cost-tampered", web(tamperedURL, srv.URL+"/tampered.tar.gz.sig"), v1alpha1.ReasonSignatureInvalid, "/tampered.tar.gz", 1, 1, "", "signature does not verify"},
		{"cost-no-signature", web(missingURL, srv.URL+"/no-signature.tar.gz.sig"), v1alpha1.ReasonSignatureMissing, "/no-signature.tar.gz", 0, 1, "", "signature not found"},
		{"cost-stale-canary", web(staleURL, srv.URL+"/stale-canary.tar.gz.sig"), v1alpha1.ReasonSignatureMissing, "/stale-canary.tar.gz", 0, 1, "", "signature not found"},
		{"cost-oci-other-key", ociOther, v1alpha1.ReasonSignatureInvalid, "", 0, 0, "/v2/shims/oci-other/", "signature does not verify"},
		{"cost-oci-unsigned", ociUnsigned, v1alpha1.ReasonSignatureMissing, "", 0, 0, "/v2/shims/oci-unsigned/", "no signature"},
	}
	create := func(name string, fs v1alpha1.FetchStrategy) *v1alpha1.Shim {
		t.Helper()
		s := pinShim(name, fs)
		s.Spec.Verification = keys
		if err := env.Client.Create(ctx, s); err != nil {
			t.Fatal(err)
		}
		return s
	}
	// A canary RuntimeClass from before (an operator that published it
	// for a refused Shim), with the labels the operator gives its own.
	stale := create("cost-stale-canary", tests[3].fetch)
	staleRC := &nodev1.RuntimeClass{ObjectMeta: metav1.ObjectMeta{Name: operator.CanaryRuntimeClass(stale.Name),
		Labels:          map[string]string{"app.kubernetes.io/managed-by": "shimkit", "shim.containerd.x-k8s.io/shim": stale.Name},
		OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(stale, v1alpha1.GroupVersion.WithKind("Shim"))}}, Handler: "cost-stale-canary"}
	if err := env.Client.Create(ctx, staleRC); err != nil {
		t.Fatal(err)
	}

	// The good Shim's canary RuntimeClass, as its Jobs appear.
	var canaryAtJob sync.Map
	watchCtx, stopWatch := context.WithCancel(ctx)
	t.Cleanup(stopWatch)
	go func() {
		for watchCtx.Err() == nil {
			if len(jobsOf(t, env.Client, "cost-good")) > 0 {
				err := env.Client.Get(ctx, client.ObjectKey{Name: operator.CanaryRuntimeClass("cost-good")}, &nodev1.RuntimeClass{})
				canaryAtJob.Store("err", fmt.Sprint(err))
				return
			}
			time.Sleep(5 * time.Millisecond)
		}
	}()

	startOperatorWith(t, env, env.Config, func(o *operator.Options) { o.ResyncPeriod = refusalResync })
	for _, tt := range tests[:3] {
		create(tt.name, tt.fetch)
	}
	for _, tt := range tests[4:] {
		create(tt.name, tt.fetch)
	}
	create("cost-good", web(goodURL, srv.URL+"/good.tar.gz.sigstore.json"))

	degraded := func(name, reason string) func() (bool, string) {
		return func() (bool, string) {
			s := getShim(t, env.Client, name)
			c := condition(s, v1alpha1.ConditionDegraded)
			if c == nil || s.Status.ObservedGeneration != s.Generation {
				return false, "no Degraded of this generation"
			}
			return c.Reason == reason, c.Reason + ": " + c.Message
		}
	}
	for _, tt := range tests {
		waitFor(t, 30*time.Second, tt.name+" "+tt.reason, degraded(tt.name, tt.reason))
	}
	readyAt(t, env.Client, "cost-good", goodD.String())
	registryBefore := map[string]int64{}
	for _, tt := range tests {
		if tt.registry != "" {
			registryBefore[tt.name] = reg.RequestsUnder(tt.registry)
		}
	}
	// About 8 reconciles of each refused Shim.
	time.Sleep(8 * refusalResync)

	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.artifact != "" {
				if got := srv.RequestsFor(tt.artifact); got != tt.downloads {
					t.Errorf("artifact downloaded %d times, want %d", got, tt.downloads)
				}
				if got := srv.RequestsFor(tt.artifact + ".sig"); got != tt.sigReads {
					t.Errorf("signature read %d times, want %d", got, tt.sigReads)
				}
			}
			if tt.registry != "" {
				if got := reg.RequestsUnder(tt.registry) - registryBefore[tt.name]; got != 0 {
					t.Errorf("%d registry requests under %s while refused", got, tt.registry)
				}
			}
			ok, msg := degraded(tt.name, tt.reason)()
			if !ok || !strings.Contains(msg, tt.want) {
				t.Errorf("Degraded %q, want reason %s saying %q", msg, tt.reason, tt.want)
			}
			if strings.Contains(msg, "artifact not found") {
				t.Errorf("Degraded says the artifact is missing: %s", msg)
			}
			err := env.Client.Get(ctx, client.ObjectKey{Name: operator.CanaryRuntimeClass(tt.name)}, &nodev1.RuntimeClass{})
			if !apierrors.IsNotFound(err) {
				t.Errorf("canary RuntimeClass of a refused Shim: %v", err)
			}
			if evs := shimEvents(t, env.Client, tt.name, tt.reason); len(evs) != 1 {
				t.Errorf("%d Warning Events %s, want 1: %v", len(evs), tt.reason, evs)
			}
			if n := len(jobsOf(t, env.Client, tt.name)); n != 0 {
				t.Errorf("%d Jobs", n)
			}
		})
	}

	t.Run("cost-good", func(t *testing.T) {
		if got, _ := canaryAtJob.Load("err"); got != "<nil>" {
			t.Errorf("the canary RuntimeClass when the first Job appeared: %v", got)
		}
		if rc := getRuntimeClass(t, env.Client, operator.CanaryRuntimeClass("cost-good")); len(rc.OwnerReferences) != 1 || rc.OwnerReferences[0].Name != "cost-good" {
			t.Errorf("canary RuntimeClass after the rollout: %+v", rc.OwnerReferences)
		}
	})

	// What can change the answer resolves again at once, once each.
	t.Run("asked again", func(t *testing.T) {
		const name, path = "cost-other-key", "/other-key.tar.gz"
		want := srv.RequestsFor(path)
		for _, change := range []struct {
			what   string
			change func(*v1alpha1.Shim)
		}{
			{"the resolve annotation", func(s *v1alpha1.Shim) { s.Annotations = map[string]string{v1alpha1.ResolveAnnotation: "1"} }},
			{"the resolve interval", func(s *v1alpha1.Shim) {
				s.Spec.FetchStrategy.ResolveInterval = &metav1.Duration{Duration: time.Hour}
			}},
			{"the spec", func(s *v1alpha1.Shim) { s.Spec.FetchStrategy.AnonHTTP.Signature = srv.URL + "/other-key-2.tar.gz.sig" }},
		} {
			updateShim(t, env.Client, name, change.change)
			want++
			waitFor(t, 10*time.Second, "a download after a change of "+change.what, func() (bool, string) {
				got := srv.RequestsFor(path)
				return got >= want, fmt.Sprintf("%d downloads", got)
			})
			time.Sleep(4 * refusalResync)
			if got := srv.RequestsFor(path); got != want {
				t.Errorf("after a change of %s: %d downloads, want %d", change.what, got, want)
			}
			waitFor(t, 10*time.Second, "still refused", degraded(name, v1alpha1.ReasonSignatureInvalid))
		}
	})
}

// TestRefusedArtifactBackoff: a refused artifact whose spec does not change
// is downloaded again with a backoff (its first wait shortened to 100 ms
// here, 30 s in production), doubled after each refusal, while the Shim is
// reconciled every 200 ms. Before the fix it was downloaded on every
// reconcile (15 downloads in 3 s, 200 ms apart).
func TestRefusedArtifactBackoff(t *testing.T) {
	env := startCluster(t)
	srv := testutil.StartFileServer(t)
	other := signtest.NewSigningKey(t)
	trusted := signtest.NewSigningKey(t)
	a := testutil.NewShimArchive(t, "backoff", "/bin/true", nil)
	url := srv.Add("/backoff.tar.gz", a.Data)
	srv.Add("/backoff.tar.gz.sig", other.DetachedSignature(t, digest.Digest("sha256:"+a.SHA256)))
	createNodes(t, env.Client, 1, map[string]string{"pin": "true"}, "pin")
	const base, resync, window = 100 * time.Millisecond, 200 * time.Millisecond, 3 * time.Second
	startOperatorWith(t, env, env.Config, func(o *operator.Options) {
		o.ResyncPeriod = resync
		operator.SetResolveBackoff(o, base)
	})

	// When each download was made (polled every 5 ms).
	var times []time.Time
	var mu sync.Mutex
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		var seen int64
		for ctx.Err() == nil {
			if n := srv.RequestsFor("/backoff.tar.gz"); n > seen {
				mu.Lock()
				for range n - seen {
					times = append(times, time.Now())
				}
				mu.Unlock()
				seen = n
			}
			time.Sleep(5 * time.Millisecond)
		}
	}()
	s := pinShim("backoff", v1alpha1.FetchStrategy{Type: v1alpha1.FetchAnonHTTP, AnonHTTP: &v1alpha1.AnonHTTPFetch{Location: url, Signature: srv.URL + "/backoff.tar.gz.sig"}})
	s.Spec.Verification = &v1alpha1.Verification{PublicKeys: []string{string(trusted.PublicKeyPEM())}}
	if err := env.Client.Create(context.Background(), s); err != nil {
		t.Fatal(err)
	}
	time.Sleep(window)
	stop()
	<-done
	mu.Lock()
	defer mu.Unlock()
	var gaps []time.Duration
	for i := 1; i < len(times); i++ {
		gaps = append(gaps, times[i].Sub(times[i-1]).Round(time.Millisecond))
	}
	t.Logf("%d downloads in %s, gaps %v", len(times), window, gaps)
	if len(times) < 3 {
		t.Fatalf("%d downloads in %s: a refused spec is not retried", len(times), window)
	}
	for i, g := range gaps {
		if wait := min(base<<i, 10*time.Minute); g < wait-20*time.Millisecond {
			t.Errorf("download %d came %s after the one before, want at least the backoff %s", i+2, g, wait)
		}
	}
	if slices.Max(gaps) < 2*resync {
		t.Errorf("no gap longer than two reconciles: %v", gaps)
	}
}

// shimEvents are the Events of reason about the Shim (one per series).
func shimEvents(t testing.TB, c client.Client, shim, reason string) []string {
	t.Helper()
	var out []string
	for _, e := range eventsOf(t, c, shim) {
		if e.Reason == reason {
			out = append(out, e.Action+": "+e.Note)
		}
	}
	return out
}
