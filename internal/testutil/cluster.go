package testutil

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// Cluster is a real single-node Kubernetes cluster: etcd, kube-apiserver,
// kube-controller-manager and kube-scheduler v1.36 on this machine, and one
// node whose kubelet and containerd run as systemd units in the node
// sandbox.
type Cluster struct {
	*Env
	Node *Node
	// NodeName is the Node object's name.
	NodeName string
	// Kubeconfig is an admin kubeconfig file for kubectl.
	Kubeconfig string
	// Kubectl is the path of kubectl v1.36.
	Kubectl string
}

// ClusterBins returns the directory of the cluster binaries (make bins-cluster).
func ClusterBins(t testing.TB) string {
	return BinDir(t, "kube", "KUBE_VERSION", "kube-apiserver", "kubelet", "kube-controller-manager", "kube-scheduler", "kubectl")
}

// StartCluster brings the cluster up and waits for the node to be Ready;
// everything is torn down in t.Cleanup.
func StartCluster(t testing.TB, containerd ContainerdBuild, addToScheme ...func(*runtime.Scheme) error) *Cluster {
	t.Helper()
	bins := ClusterBins(t)
	// One cluster at a time on a machine: its node shares the host's
	// network (kubelet ports, the CNI bridge), and test packages run in
	// parallel.
	lockMachine(t, "cluster")
	env := StartEnvWith(t, func(e *envtest.Environment) {
		// A real cluster: pods get ServiceAccount tokens (envtest turns
		// that off), and the API server reaches the kubelet by IP.
		e.ControlPlane.GetAPIServer().Configure().
			Disable("disable-admission-plugins").
			Set("kubelet-preferred-address-types", "InternalIP")
	}, addToScheme...)
	dir := t.TempDir()
	c := &Cluster{Env: env, NodeName: "shimkit-node", Kubectl: filepath.Join(bins, "kubectl")}
	c.Kubeconfig = WriteKubeconfig(t, env.Config, filepath.Join(dir, "admin.conf"))
	api := env.Environment.ControlPlane.APIServer
	caFile := filepath.Join(dir, "ca.crt")
	if err := os.WriteFile(caFile, env.Config.CAData, 0o644); err != nil {
		t.Fatal(err)
	}
	kc := "--kubeconfig=" + c.Kubeconfig
	startProcess(t, dir, filepath.Join(bins, "kube-controller-manager"), kc,
		"--authentication-kubeconfig="+c.Kubeconfig, "--authorization-kubeconfig="+c.Kubeconfig,
		"--root-ca-file="+caFile, "--service-account-private-key-file="+filepath.Join(api.CertDir, "sa-signer.key"),
		"--use-service-account-credentials=false", "--leader-elect=false", "--bind-address=127.0.0.1", "--secure-port=0",
		"--controllers=*,-nodeipam,-cloud-node-lifecycle,-service-lb-controller,-route")
	startProcess(t, dir, filepath.Join(bins, "kube-scheduler"), kc,
		"--authentication-kubeconfig="+c.Kubeconfig, "--authorization-kubeconfig="+c.Kubeconfig,
		"--leader-elect=false", "--bind-address=127.0.0.1", "--secure-port=0")

	nodeIP, err := hostIP()
	if err != nil {
		t.Fatal(err)
	}
	kubelet, err := os.ReadFile(filepath.Join(bins, "kubelet"))
	if err != nil {
		t.Fatal(err)
	}
	nodeKubeconfig, err := os.ReadFile(c.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{
		"/usr/local/bin/kubelet":              kubelet,
		"/etc/kubernetes/kubelet.conf":        nodeKubeconfig,
		"/etc/kubernetes/kubelet.yaml":        []byte(kubeletConfig),
		"/etc/systemd/system/kubelet.service": []byte(fmt.Sprintf(kubeletUnit, nodeIP, c.NodeName)),
		"/etc/cni/net.d/10-shimkit.conflist":  []byte(cniConfig),
		"/etc/resolv.conf":                    []byte("nameserver 127.0.0.1\n"),
		"/etc/containerd/config.toml":         clusterContainerdConfig(containerd),
	}
	n := StartNode(t, NodeOptions{Containerd: &containerd, Files: files, HostNetwork: true})
	c.Node = n
	t.Cleanup(func() { removeLink("cni0") })
	ImportPause(t, "/usr/bin/ctr", n.Socket())
	if err := os.Chmod(n.Local("/usr/local/bin/kubelet"), 0o755); err != nil {
		t.Fatal(err)
	}
	if out, err := n.Exec(context.Background(), "systemctl", "enable", "--now", "kubelet"); err != nil {
		t.Fatalf("start kubelet: %v %s", err, out)
	}
	if err := c.waitNodeReady(90 * time.Second); err != nil {
		t.Fatalf("%v\n%s", err, n.Journal("kubelet"))
	}
	return c
}

func (c *Cluster) waitNodeReady(timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	last := "no Node object"
	for time.Now().Before(deadline) {
		node := &corev1.Node{}
		if err := c.Client.Get(context.Background(), client.ObjectKey{Name: c.NodeName}, node); err == nil {
			for _, cond := range node.Status.Conditions {
				if cond.Type == corev1.NodeReady {
					if cond.Status == corev1.ConditionTrue {
						return nil
					}
					last = cond.Reason + ": " + cond.Message
				}
			}
		}
		time.Sleep(250 * time.Millisecond)
	}
	return fmt.Errorf("node %s not Ready after %v: %s", c.NodeName, timeout, last)
}

// clusterContainerdConfig adds CNI from Debian's package to the build's
// minimal config.
func clusterContainerdConfig(b ContainerdBuild) []byte {
	cni := "\n[plugins.\"io.containerd.cri.v1.runtime\".cni]\n  bin_dirs = [\"/usr/lib/cni\"]\n  conf_dir = \"/etc/cni/net.d\"\n"
	if b.Major == 1 {
		cni = "\n[plugins.\"io.containerd.grpc.v1.cri\".cni]\n  bin_dir = \"/usr/lib/cni\"\n  conf_dir = \"/etc/cni/net.d\"\n"
	}
	return append(b.MinimalConfig(), cni...)
}

const kubeletConfig = `apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
cgroupDriver: cgroupfs
failCgroupV1: false
failSwapOn: false
makeIPTablesUtilChains: false
containerRuntimeEndpoint: unix:///run/containerd/containerd.sock
authentication:
  anonymous: {enabled: true}
  webhook: {enabled: false}
authorization: {mode: AlwaysAllow}
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
resolvConf: /etc/resolv.conf
evictionHard: {memory.available: "1Mi", nodefs.available: "1%", imagefs.available: "1%", nodefs.inodesFree: "1%"}
imageGCHighThresholdPercent: 100
localStorageCapacityIsolation: false
serializeImagePulls: false
`

const kubeletUnit = `[Unit]
Description=kubelet
After=containerd.service
Wants=containerd.service

[Service]
ExecStart=/usr/local/bin/kubelet --config=/etc/kubernetes/kubelet.yaml --kubeconfig=/etc/kubernetes/kubelet.conf --node-ip=%s --hostname-override=%s
Restart=always
RestartSec=1

[Install]
WantedBy=multi-user.target
`

// Pods of the tests use the host's network; the bridge is there because
// kubelet reports a node without a CNI config NotReady.
const cniConfig = `{
  "cniVersion": "1.0.0",
  "name": "shimkit-test",
  "plugins": [
    {"type": "bridge", "bridge": "cni0", "isGateway": false, "ipMasq": false,
     "ipam": {"type": "host-local", "ranges": [[{"subnet": "10.244.0.0/24"}]]}},
    {"type": "loopback"}
  ]
}
`

// WriteKubeconfig writes an admin kubeconfig for cfg.
func WriteKubeconfig(t testing.TB, cfg *rest.Config, path string) string {
	t.Helper()
	kc := clientcmdapi.NewConfig()
	kc.Clusters["test"] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData}
	kc.AuthInfos["admin"] = &clientcmdapi.AuthInfo{ClientCertificateData: cfg.CertData, ClientKeyData: cfg.KeyData, Token: cfg.BearerToken}
	kc.Contexts["test"] = &clientcmdapi.Context{Cluster: "test", AuthInfo: "admin"}
	kc.CurrentContext = "test"
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		t.Fatal(err)
	}
	return path
}

// startProcess runs a control-plane binary until the test ends.
func startProcess(t testing.TB, dir, bin string, args ...string) {
	t.Helper()
	logf, err := os.Create(filepath.Join(dir, filepath.Base(bin)+".log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", bin, err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); logf.Close(); close(done) }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	})
}

// hostIP is this machine's first non-loopback IPv4 address (kubelet
// refuses a loopback node IP).
func hostIP() (string, error) {
	ifaces, err := net.Interfaces()
	if err != nil {
		return "", err
	}
	for _, i := range ifaces {
		if i.Flags&net.FlagLoopback != 0 || i.Flags&net.FlagUp == 0 || strings.HasPrefix(i.Name, "cni") {
			continue
		}
		addrs, _ := i.Addrs()
		for _, a := range addrs {
			if ipn, ok := a.(*net.IPNet); ok && ipn.IP.To4() != nil {
				return ipn.IP.String(), nil
			}
		}
	}
	return "", fmt.Errorf("no non-loopback IPv4 address")
}

func removeLink(name string) {
	if _, err := net.InterfaceByName(name); err == nil {
		_ = exec.Command("ip", "link", "del", name).Run()
	}
}

// WaitPodRunning waits until a pod runs.
func (c *Cluster) WaitPodRunning(t testing.TB, namespace, name string) *corev1.Pod {
	t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	pod := &corev1.Pod{}
	for time.Now().Before(deadline) {
		if err := c.Client.Get(context.Background(), client.ObjectKey{Namespace: namespace, Name: name}, pod); err == nil && pod.Status.Phase == corev1.PodRunning {
			return pod
		}
		time.Sleep(250 * time.Millisecond)
	}
	t.Fatalf("pod %s/%s not running: %+v\n%s", namespace, name, pod.Status, c.Node.Journal("kubelet"))
	return nil
}

// lockMachine holds a machine-wide lock until the test ends.
func lockMachine(t testing.TB, name string) {
	t.Helper()
	f, err := os.OpenFile(filepath.Join(os.TempDir(), "shimkit-"+name+".lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN); f.Close() })
}
