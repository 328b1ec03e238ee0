package operator

import (
	"path"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/shimkit/shimkit/internal/operator/nodeview"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shimkit/shimkit/installer/plan"
	"github.com/shimkit/shimkit/operator/api/v1alpha1"
)

// TestInstallerPodPrivileges: the installer pod gets a grace period that
// covers a restart in flight and the whole rollback after it, the node's
// PID namespace only on request, and the node directories it works in
// instead of the node's /: none the kubelet would create but
// /usr/local/bin, containerd's PATH read-only but for that one.
func TestInstallerPodPrivileges(t *testing.T) {
	shim := &v1alpha1.Shim{ObjectMeta: metav1.ObjectMeta{Name: "spin", UID: "u-1"}, Spec: v1alpha1.ShimSpec{
		FetchStrategy: v1alpha1.FetchStrategy{Type: v1alpha1.FetchAnonHTTP, AnonHTTP: &v1alpha1.AnonHTTPFetch{Location: "https://a.invalid/spin.tgz"}},
		RuntimeClass:  v1alpha1.RuntimeClassSpec{Name: "spin", Handler: "spin"},
	}}
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}}
	for _, tt := range []struct {
		name    string
		opts    Options
		op      plan.Operation
		hostPID bool
	}{
		{"default restart timeout", Options{}, plan.OpInstall, false},
		{"90s restart timeout", Options{RestartTimeout: 90 * time.Second}, plan.OpInstall, false},
		{"uninstall, 5m", Options{RestartTimeout: 5 * time.Minute}, plan.OpUninstall, false},
		{"host PID asked for", Options{HostPID: true}, plan.OpInstall, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tt.opts.InstallerImage, tt.opts.Namespace = "installer:test", "shimkit-system"
			r, err := New(nil, nil, tt.opts)
			if err != nil {
				t.Fatal(err)
			}
			p, err := BuildPlan(shim, node, tt.op, r.opts)
			if err != nil {
				t.Fatal(err)
			}
			job, err := r.starter.buildJob(shim, node, p, "h1", nodeview.ImageWay(r.opts.ServerVersion, node))
			if err != nil {
				t.Fatal(err)
			}
			pod := job.Spec.Template.Spec
			// SIGTERM during a restart: the rest of its health wait, then
			// the rollback (which restarts and waits once more), then a
			// margin to exit.
			restart, rollback := p.Restart.HealthTimeout(), p.Restart.RollbackTimeout()
			want := r.opts.RestartTimeout
			if want == 0 {
				want = plan.DefaultRestartTimeout
			}
			if restart != want || rollback < restart {
				t.Errorf("restart wait %s, rollback %s: want %s, and a rollback that covers one more restart", restart, rollback, want)
			}
			const margin = 10 * time.Second
			if got := time.Duration(*pod.TerminationGracePeriodSeconds) * time.Second; got < restart+rollback+margin {
				t.Errorf("terminationGracePeriodSeconds %s, want at least %s (restart) + %s (rollback) + %s", got, restart, rollback, margin)
			}
			if pod.HostPID != tt.hostPID {
				t.Errorf("hostPID %v, want %v", pod.HostPID, tt.hostPID)
			}
			checkHostMounts(t, pod, r.opts.HostRoot)
		})
	}
}

func checkHostMounts(t *testing.T, pod corev1.PodSpec, hostRoot string) {
	t.Helper()
	writable := map[string]bool{"/etc": true, "/var": true, "/run": true, "/opt": true, "/usr/local/bin": true, "/usr": false, "/bin": false, "/sbin": false, "/proc": false}
	seen := map[string]bool{}
	var order []string
	for _, m := range pod.Containers[0].VolumeMounts {
		i := slices.IndexFunc(pod.Volumes, func(v corev1.Volume) bool { return v.Name == m.Name })
		hp := pod.Volumes[i].HostPath
		if hp == nil {
			continue
		}
		p := hp.Path
		seen[p] = true
		order = append(order, p)
		w, known := writable[p]
		switch {
		case p == "/":
			t.Errorf("the node's / is mounted")
		case !known:
			t.Errorf("unexpected host path %s", p)
		case m.ReadOnly == w:
			t.Errorf("%s: read-only %v, want %v", p, m.ReadOnly, !w)
		case m.MountPath != path.Join(hostRoot, p):
			t.Errorf("%s mounted at %s, want under the host root %s", p, m.MountPath, hostRoot)
		}
		want := corev1.HostPathDirectory
		if p == "/usr/local/bin" {
			want = corev1.HostPathDirectoryOrCreate
		}
		if *hp.Type != want {
			t.Errorf("%s: hostPath type %s, want %s (the kubelet must not create what detection looks at)", p, *hp.Type, want)
		}
	}
	for p := range writable {
		if !seen[p] {
			t.Errorf("%s not mounted", p)
		}
	}
	// A directory mounted inside another comes after it.
	for i, p := range order {
		for _, q := range order[i+1:] {
			if strings.HasPrefix(p, q+"/") {
				t.Errorf("%s is mounted before its parent %s", p, q)
			}
		}
	}
}
