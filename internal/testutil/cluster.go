package testutil

import (
	"context"
	"fmt"
	"maps"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// Cluster is a real Kubernetes cluster: etcd, kube-apiserver,
// kube-controller-manager and kube-scheduler v1.36 on this machine, and
// nodes whose kubelet and containerd run as systemd units in node
// sandboxes, each in its own network namespace on a bridge of this
// machine (clusternet.go).
type Cluster struct {
	*Env
	// Node and NodeName are the first node (the only one of a single-node
	// cluster).
	Node     *Node
	NodeName string
	// Nodes are all the nodes, in the order they joined.
	Nodes []ClusterNode
	// HostIP is this machine's address on the cluster's network: the API
	// server's, and where servers for the nodes must listen
	// (StartFileServer, StartRegistry).
	HostIP string
	// Kubeconfig is an admin kubeconfig file for kubectl.
	Kubeconfig string
	// Kubectl is the path of kubectl v1.36.
	Kubectl string

	bins       string
	containerd ContainerdBuild
	dir        string
	pauseTar   string // the pause image, written once for every node
	// mu guards joins and Nodes: nodes join and leave from parallel
	// subtests.
	mu    sync.Mutex
	joins int // nodes started so far: names and addresses are never reused
}

// ClusterNode is one node of a Cluster.
type ClusterNode struct {
	*Node
	// Name is the Node object's name, IP its address.
	Name, IP string

	index int         // its place on the bridge: name and address
	opts  JoinOptions // how it was made: a reimage makes it so again
}

// ClusterOptions shape a cluster.
type ClusterOptions struct {
	// Containerd is the build every node runs.
	Containerd ContainerdBuild
	// Nodes is how many nodes join at start (default 1); AddNode adds more.
	Nodes int
	// AddToScheme registers extra API types with the client's scheme.
	AddToScheme []func(*runtime.Scheme) error
}

// ClusterBins returns the directory of the cluster binaries (make bins-cluster).
func ClusterBins(t testing.TB) string {
	return BinDir(t, "kube", KubeNewest, "kube-apiserver", "kubelet", "kube-controller-manager", "kube-scheduler", "kubectl")
}

// StartCluster brings up a single-node cluster and waits for the node to
// be Ready; everything is torn down in t.Cleanup.
func StartCluster(t testing.TB, containerd ContainerdBuild, addToScheme ...func(*runtime.Scheme) error) *Cluster {
	t.Helper()
	return StartClusterWith(t, ClusterOptions{Containerd: containerd, AddToScheme: addToScheme})
}

// StartClusterWith brings the cluster up and waits for every node to be
// Ready; everything is torn down in t.Cleanup.
func StartClusterWith(t testing.TB, opts ClusterOptions) *Cluster {
	t.Helper()
	bins := ClusterBins(t)
	// One cluster at a time on a machine: its bridge and addresses are
	// fixed, and test packages run in parallel.
	lockMachine(t, "cluster")
	startBridge(t)
	port, err := freePort(clusterHostIP)
	if err != nil {
		t.Fatal(err)
	}
	env := StartEnvOf(t, KubeNewest, func(e *envtest.Environment) {
		// A real cluster: pods get ServiceAccount tokens (envtest turns
		// that off), and the API server reaches the kubelet by IP. It
		// serves on the bridge, with a certificate for that address.
		api := e.ControlPlane.GetAPIServer()
		api.Address, api.Port = clusterHostIP, port // its secure serving address
		api.Configure().
			Disable("disable-admission-plugins").
			Set("advertise-address", clusterHostIP).
			Set("kubelet-preferred-address-types", "InternalIP")
	}, opts.AddToScheme...)
	c := &Cluster{Env: env, HostIP: clusterHostIP, Kubectl: filepath.Join(bins, "kubectl"), bins: bins, containerd: opts.Containerd, dir: t.TempDir()}
	c.Kubeconfig = WriteKubeconfig(t, env.Config, filepath.Join(c.dir, "admin.conf"))
	api := env.Environment.ControlPlane.APIServer
	caFile := filepath.Join(c.dir, "ca.crt")
	if err := os.WriteFile(caFile, env.Config.CAData, 0o644); err != nil {
		t.Fatal(err)
	}
	kc := "--kubeconfig=" + c.Kubeconfig
	startProcess(t, c.dir, filepath.Join(bins, "kube-controller-manager"), kc,
		"--authentication-kubeconfig="+c.Kubeconfig, "--authorization-kubeconfig="+c.Kubeconfig,
		"--root-ca-file="+caFile, "--service-account-private-key-file="+filepath.Join(api.CertDir, "sa-signer.key"),
		"--use-service-account-credentials=false", "--leader-elect=false", "--bind-address=127.0.0.1", "--secure-port=0",
		"--controllers=*,-nodeipam,-cloud-node-lifecycle,-service-lb-controller,-route")
	startProcess(t, c.dir, filepath.Join(bins, "kube-scheduler"), kc,
		"--authentication-kubeconfig="+c.Kubeconfig, "--authorization-kubeconfig="+c.Kubeconfig,
		"--leader-elect=false", "--bind-address=127.0.0.1", "--secure-port=0")

	for range max(opts.Nodes, 1) {
		c.startNode(t, JoinOptions{registryHosts: true})
	}
	for _, n := range c.Nodes {
		if err := c.waitNodeReady(n.Name, 90*time.Second); err != nil {
			t.Fatalf("%v\n%s", err, n.Journal("kubelet"))
		}
	}
	return c
}

// JoinOptions are what a node pool gives a node that joins.
type JoinOptions struct {
	// Labels and Taints are registered with the Node (kubelet's
	// --node-labels and --register-with-taints, "key[=value]:Effect").
	Labels map[string]string
	Taints []string
	// Files are written into the node's root filesystem before it boots,
	// Executables too, executable.
	Files, Executables map[string][]byte
	// Images are image archives imported into containerd before kubelet
	// starts (a node image's pre-pulled images).
	Images []string
	// K3s makes it a k3s-style node (k3snode.go): containerd and the
	// kubelet in one unit, k3s-agent.service, the k3s layout and socket.
	K3s bool
	// Containerd is the node's own build (default the cluster's).
	Containerd *ContainerdBuild
	// ReadOnly are node directories read-only inside the node
	// (NodeOptions.ReadOnly).
	ReadOnly []string
	// OwnBootID gives the node a boot ID of its own, which a reboot's
	// stand-in (Cluster.Reboot) changes, in place of this machine's. Only
	// its systemd, runtime and kubelet read it: its containers read this
	// machine's. On nodes with one, the kubelet killed a running image
	// volume pod after a containerd restart (the e2e images scenario; not
	// without one, cause not found), so only the nodes a test reboots
	// have one.
	OwnBootID bool
	// KubeletArgs are more kubelet flags (--image-credential-provider-config,
	// say).
	KubeletArgs []string
	// CRIO makes it a CRI-O node (crionode.go): the kubelet on
	// crio.service, which pulls the pause image and Images from a registry
	// of the test on the cluster's network (Containerd does not apply).
	CRIO bool

	// registryHosts gives containerd RegistryHostsDir (the cluster's
	// first nodes: TrustRegistry); a node that joins later keeps the
	// build's config, which its scenario may rely on.
	registryHosts bool
}

// AddNode boots one more node, joins it to the cluster and waits for it to
// be Ready. The node leaves the cluster when t ends: its Node object is
// deleted before its sandbox stops, so that nothing later is scheduled
// onto a node that is gone.
func (c *Cluster) AddNode(t testing.TB, opts JoinOptions) ClusterNode {
	t.Helper()
	return c.AddNodes(t, opts)[0]
}

// AddNodes is AddNode for several nodes: each boots in turn, and their
// kubelets register and get Ready together.
func (c *Cluster) AddNodes(t testing.TB, opts ...JoinOptions) []ClusterNode {
	t.Helper()
	var nodes []ClusterNode
	for _, o := range opts {
		n := c.startNode(t, o)
		t.Cleanup(func() { c.RemoveNode(t, n) })
		nodes = append(nodes, n)
	}
	for _, n := range nodes {
		if err := c.waitNodeReady(n.Name, 90*time.Second); err != nil {
			t.Fatalf("%v\n%s", err, n.Journal(n.KubeletUnit()))
		}
	}
	return nodes
}

// CurrentNodes returns the nodes in the cluster now (Nodes, read while
// tests that run at once join and remove theirs).
func (c *Cluster) CurrentNodes() []ClusterNode {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.Nodes)
}

// KubeletUnit is the systemd unit the node's kubelet runs in.
func (n ClusterNode) KubeletUnit() string {
	if n.opts.K3s {
		return K3sUnit
	}
	return "kubelet"
}

// startNode boots the next node, plugs it into the bridge and starts its
// kubelet.
func (c *Cluster) startNode(t testing.TB, opts JoinOptions) ClusterNode {
	t.Helper()
	c.mu.Lock()
	i := c.joins
	c.joins++
	c.mu.Unlock()
	cn := c.bootNode(t, i, opts)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.Nodes = append(c.Nodes, cn)
	if i == 0 {
		c.Node, c.NodeName = cn.Node, cn.Name
	}
	return cn
}

// Reimage reimages a node in place, as a cloud does with a VM of a scale
// set: the machine powers off, boots a fresh root filesystem made as the
// node's was (a new machine-id, nothing shimkit wrote) and joins again
// under the same name and address, its Node object kept. It waits until
// the node is Ready and returns it; the node it replaces is gone from
// Nodes. The new machine is t's: it powers off when t ends.
func (c *Cluster) Reimage(t testing.TB, old ClusterNode) ClusterNode {
	t.Helper()
	if err := old.teardown(); err != nil {
		t.Fatalf("power off %s: %v", old.Name, err)
	}
	n := c.bootNode(t, old.index, old.opts)
	c.mu.Lock()
	for i := range c.Nodes {
		if c.Nodes[i].Name == old.Name {
			c.Nodes[i] = n
		}
	}
	if old.index == 0 {
		c.Node = n.Node
	}
	c.mu.Unlock()
	if err := c.waitNodeReady(n.Name, 90*time.Second); err != nil {
		t.Fatalf("%v\n%s", err, n.Journal(n.KubeletUnit()))
	}
	return n
}

// bootNode boots node i (its name and address follow from i).
func (c *Cluster) bootNode(t testing.TB, i int, opts JoinOptions) ClusterNode {
	t.Helper()
	name := "shimkit-node"
	if i > 0 {
		name = fmt.Sprintf("shimkit-node-%d", i)
	}
	nodeKubeconfig, err := os.ReadFile(c.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	build := c.containerd
	if opts.Containerd != nil {
		build = *opts.Containerd
	}
	kubeletArgs := fmt.Sprintf(kubeletArgsFormat, nodeIP(i), name, joinFlags(opts))
	files := map[string][]byte{
		"/etc/kubernetes/kubelet.conf":       nodeKubeconfig,
		"/etc/kubernetes/kubelet.yaml":       []byte(kubeletConfig),
		"/etc/cni/net.d/10-shimkit.conflist": []byte(cniConfig),
		"/etc/resolv.conf":                   []byte("nameserver 127.0.0.1\n"),
		"/etc/hostname":                      []byte(name + "\n"),
	}
	if opts.K3s {
		files["/etc/kubernetes/kubelet.yaml"] = []byte(strings.Replace(kubeletConfig, "unix:///run/containerd/containerd.sock", "unix://"+K3sSocket, 1))
	} else {
		files["/etc/systemd/system/kubelet.service"] = []byte(fmt.Sprintf(kubeletUnit, kubeletArgs))
		files["/etc/containerd/config.toml"] = ClusterContainerdConfig(build)
		if opts.registryHosts {
			// Registry hosts from RegistryHostsDir: a test's registry on
			// the cluster's network is trusted by writing its hosts.toml
			// there (TrustRegistry); containerd reads them at each pull.
			files["/etc/containerd/config.toml"] = WithRegistryHosts(files["/etc/containerd/config.toml"], build)
		}
	}
	nodeOpts := NodeOptions{Containerd: &build, Files: files, Executables: opts.Executables, K3s: opts.K3s, ReadOnly: opts.ReadOnly, OwnBootID: opts.OwnBootID}
	if opts.CRIO {
		c.crioNodeFiles(t, files, opts)
		nodeOpts.Containerd, nodeOpts.CRIO = nil, true
	}
	maps.Copy(files, waitOnlineFiles)
	maps.Copy(files, opts.Files)
	nodeOpts.Plug = func(n *Node) error { return plugNode(n, i) }
	n := StartNode(t, nodeOpts)
	if c.pauseTar == "" && !opts.CRIO {
		c.pauseTar = PauseImageTar(t, c.dir)
	}
	if !opts.CRIO {
		for _, img := range append([]string{c.pauseTar}, opts.Images...) {
			ImportImage(t, "/usr/bin/ctr", n.Socket(), img)
		}
	}
	if err := copyExecutable(filepath.Join(c.bins, "kubelet"), n.Local("/usr/local/bin/kubelet")); err != nil {
		t.Fatal(err)
	}
	if opts.K3s {
		// The agent ran containerd alone so far: with the kubelet's
		// arguments, its restart starts both.
		if err := os.WriteFile(n.Local(K3sAgentEnv), []byte("KUBELET_ARGS='"+kubeletArgs+"'\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if out, err := n.Exec(context.Background(), "systemctl", "restart", K3sUnit); err != nil {
			t.Fatalf("start the k3s-style agent on %s: %v %s", name, err, out)
		}
	} else if out, err := n.Exec(context.Background(), append([]string{"systemctl"}, kubeletStart(opts)...)...); err != nil {
		t.Fatalf("start kubelet on %s: %v %s", name, err, out)
	}
	return ClusterNode{Node: n, Name: name, IP: nodeIP(i), index: i, opts: opts}
}

// RemoveNode takes a node out of the cluster: it stops its kubelet,
// deletes its Node object (its pods go with it) and takes it out of
// Nodes. The machine runs on until the cluster ends. Removing a node twice
// is removing it once.
func (c *Cluster) RemoveNode(t testing.TB, n ClusterNode) {
	// A kubelet that runs on registers its node again.
	c.mu.Lock()
	i := slices.IndexFunc(c.Nodes, func(m ClusterNode) bool { return m.Name == n.Name })
	if i >= 0 {
		n = c.Nodes[i] // (a reimage replaced the machine)
	}
	c.mu.Unlock()
	_, _ = n.Exec(context.Background(), "systemctl", "stop", n.KubeletUnit())
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n.Name}}
	if err := c.Client.Delete(context.Background(), node); client.IgnoreNotFound(err) != nil {
		t.Errorf("remove node %s: %v", n.Name, err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.Nodes = slices.DeleteFunc(c.Nodes, func(m ClusterNode) bool { return m.Name == n.Name })
}

// kubeletStart is how the kubelet unit is started: enabled and started,
// or only started on a node whose /etc is read-only.
func kubeletStart(opts JoinOptions) []string {
	if slices.Contains(opts.ReadOnly, "/etc") {
		return []string{"start", "kubelet"}
	}
	return []string{"enable", "--now", "kubelet"}
}

// joinFlags are the kubelet flags of a node pool's labels and taints.
func joinFlags(opts JoinOptions) string {
	var flags []string
	if len(opts.Labels) > 0 {
		var kv []string
		for _, k := range slices.Sorted(maps.Keys(opts.Labels)) {
			kv = append(kv, k+"="+opts.Labels[k])
		}
		flags = append(flags, "--node-labels="+strings.Join(kv, ","))
	}
	if len(opts.Taints) > 0 {
		flags = append(flags, "--register-with-taints="+strings.Join(opts.Taints, ","))
	}
	flags = append(flags, opts.KubeletArgs...)
	return strings.Join(flags, " ")
}

// StartFileServer starts a FileServer the nodes reach.
func (c *Cluster) StartFileServer(t testing.TB) *FileServer {
	t.Helper()
	return StartFileServerOn(t, c.HostIP)
}

// StartRegistry starts a Registry the nodes reach.
func (c *Cluster) StartRegistry(t testing.TB, username, password string) *Registry {
	t.Helper()
	return StartRegistryOn(t, c.HostIP, username, password)
}

// WaitNodeReady waits up to 90 s for the node to be Ready.
func (c *Cluster) WaitNodeReady(t testing.TB, name string) {
	t.Helper()
	if err := c.waitNodeReady(name, 90*time.Second); err != nil {
		t.Fatal(err)
	}
}

func (c *Cluster) waitNodeReady(name string, timeout time.Duration) error {
	return waitNode(c.Client, name, timeout, "Ready", func(node *corev1.Node) (bool, string) {
		for _, cond := range node.Status.Conditions {
			if cond.Type == corev1.NodeReady {
				return cond.Status == corev1.ConditionTrue, cond.Reason + ": " + cond.Message
			}
		}
		return false, "no Ready condition"
	})
}

// waitNode polls the Node object name through c until done says so, or fails after
// timeout naming what it waited for and what done said last.
func waitNode(c client.Client, name string, timeout time.Duration, what string, done func(*corev1.Node) (bool, string)) error {
	deadline := time.Now().Add(timeout)
	last := "no Node object"
	for time.Now().Before(deadline) {
		node := &corev1.Node{}
		if err := c.Get(context.Background(), client.ObjectKey{Name: name}, node); err == nil {
			ok, why := done(node)
			if ok {
				return nil
			}
			last = why
		}
		time.Sleep(250 * time.Millisecond)
	}
	return fmt.Errorf("node %s not %s after %v: %s", name, what, timeout, last)
}

// RegistryHostsDir is where a cluster node's containerd reads registry
// hosts (RegistryHostsDir/<registry>/hosts.toml: mirrors, plain HTTP)
// when its config says so (WithRegistryHosts).
const RegistryHostsDir = "/etc/containerd/certs.d"

// RegistryHosts is a hosts.toml for the registry at server (a URL) whose
// pulls go to host (a URL: the server itself over plain HTTP, or a
// mirror).
func RegistryHosts(server, host string) []byte {
	return []byte(fmt.Sprintf("server = %q\n\n[host.%q]\n  capabilities = [\"pull\", \"resolve\"]\n", server, host))
}

// TrustRegistry lets the containerd of the cluster's first nodes (those
// StartClusterWith started) pull from reg over plain HTTP, from now on: it
// writes reg's hosts.toml into RegistryHostsDir on each. A node that joined
// later is left as it is.
func (c *Cluster) TrustRegistry(t testing.TB, reg *Registry) {
	t.Helper()
	for _, n := range c.CurrentNodes() {
		if !n.opts.registryHosts {
			continue
		}
		p := n.Local(RegistryHostsDir + "/" + reg.Host + "/hosts.toml")
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, RegistryHosts("http://"+reg.Host, "http://"+reg.Host), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// ClusterContainerdConfig is a cluster node's config.toml: the build's
// minimal config and CNI from Debian's package.
func ClusterContainerdConfig(b ContainerdBuild) []byte {
	cni := "\n[plugins.\"io.containerd.cri.v1.runtime\".cni]\n  bin_dirs = [\"/usr/lib/cni\"]\n  conf_dir = \"/etc/cni/net.d\"\n"
	if b.Major == 1 {
		cni = "\n[plugins.\"io.containerd.grpc.v1.cri\".cni]\n  bin_dir = \"/usr/lib/cni\"\n  conf_dir = \"/etc/cni/net.d\"\n"
	}
	return append(b.MinimalConfig(), cni...)
}

// WithRegistryHosts adds to the build's config that its CRI reads
// registry hosts from RegistryHostsDir.
func WithRegistryHosts(cfg []byte, b ContainerdBuild) []byte {
	section := "io.containerd.cri.v1.images"
	if b.Major == 1 {
		section = "io.containerd.grpc.v1.cri"
	}
	return append(cfg, fmt.Sprintf("\n[plugins.%q.registry]\n  config_path = %q\n", section, RegistryHostsDir)...)
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

// kubeletArgsFormat are the kubelet's arguments: the node's IP, its name,
// the node pool's flags (joinFlags). cAdvisor's housekeeping runs once a
// minute, not every 10 s: the tests read no container stats, and it cut
// an idle node's share of two cores from 1.7% to 1.05% (a dozen nodes run
// at once).
const kubeletArgsFormat = "--config=/etc/kubernetes/kubelet.yaml --kubeconfig=/etc/kubernetes/kubelet.conf --node-ip=%s --hostname-override=%s --housekeeping-interval=60s %s"

const kubeletUnit = `[Unit]
Description=kubelet
After=containerd.service
Wants=containerd.service

[Service]
ExecStart=/usr/local/bin/kubelet %s
Restart=always
RestartSec=1

[Install]
WantedBy=multi-user.target
`

// Pods get addresses on a bridge inside their node (kubelet reports a
// node without a CNI config NotReady); they reach nothing beyond it, and
// the tests' pods that talk to the API server use the node's network.
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
