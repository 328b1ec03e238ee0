package operator_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"

	"github.com/shimkit/shimkit/internal/testutil"
)

// BenchmarkScale1000Nodes runs the real shimkit-operator binary against a
// real API server with 1,000 matching nodes, maxUpdate 10% and a simulated
// Job duration D, and measures the wall time to Ready against the ideal
// (10 waves × D), the operator's API requests per node (its own
// rest_client_requests_total) and its peak RSS (VmHWM).
//
//	go test ./operator -run '^$' -bench Scale1000Nodes -benchtime 1x -v
func BenchmarkScale1000Nodes(b *testing.B) {
	const nodes = 1000
	for _, c := range []struct {
		d           time.Duration
		qps, window string
	}{{time.Second, "", "0"}, {time.Second, "", ""}, {time.Second, "50", "0"}, {5 * time.Second, "", "0"}} {
		b.Run(fmt.Sprintf("D=%v/qps=%s/batch-window=%s", c.d, orDefault(c.qps), orDefault(c.window)), func(b *testing.B) { scale(b, nodes, c.d, c.qps, c.window) })
	}
}

// BenchmarkScale5000Nodes is the same rollout on 5,000 nodes, for the
// operator's peak memory.
func BenchmarkScale5000Nodes(b *testing.B) {
	b.Run("D=1s/qps=default/batch-window=0", func(b *testing.B) { scale(b, 5000, time.Second, "", "0") })
}

// BenchmarkScale15000Nodes is the same rollout on 15,000 nodes, for the
// operator's peak memory and writes per node (issue #27: at most 300 MiB
// and 2 writes per node).
//
//	go test ./operator -run '^$' -bench Scale15000Nodes -benchtime 1x -v -timeout 60m
func BenchmarkScale15000Nodes(b *testing.B) {
	b.Run("D=1s/qps=default/batch-window=0", func(b *testing.B) { scale(b, 15000, time.Second, "", "0") })
}

// BenchmarkScaleVsFloor1000Nodes runs the floor (BenchmarkScaleFloor1000Nodes)
// and the operator (BenchmarkScale1000Nodes, default QPS, no batch window)
// at 1,000 nodes and D = 1 s one after the other in one process, and logs
// the operator's wall time over the floor's (issue #27: at most 1.05).
// SHIMKIT_SCALE_PAIRS=n runs n such pairs (default 1), each with its ratio.
//
//	go test ./operator -run '^$' -bench ScaleVsFloor1000Nodes -benchtime 1x -v -timeout 60m
func BenchmarkScaleVsFloor1000Nodes(b *testing.B) {
	pairs, err := strconv.Atoi(os.Getenv("SHIMKIT_SCALE_PAIRS"))
	if err != nil || pairs < 1 {
		pairs = 1
	}
	for i := range pairs {
		var floor, op time.Duration
		b.Run(fmt.Sprintf("pair=%d/floor/D=1s", i), func(b *testing.B) { floor = scaleFloor(b, 1000, time.Second) })
		b.Run(fmt.Sprintf("pair=%d/operator/D=1s/qps=default/batch-window=0", i), func(b *testing.B) { op = scale(b, 1000, time.Second, "", "0") })
		if floor > 0 && op > 0 {
			b.Logf("pair %d, 1,000 nodes, D=1s: floor %v, operator %v: operator/floor %.3f", i, floor.Round(time.Millisecond), op.Round(time.Millisecond), op.Seconds()/floor.Seconds())
		}
	}
}

func orDefault(qps string) string {
	if qps == "" {
		return "default"
	}
	return qps
}

// scale measures one rollout. window is the operator's --batch-window
// ("": its default): a single Shim has nothing to share a Job with, and
// with the default its first installs wait the window once, for Shims
// applied with it (see BENCHMARKS.md).
func scale(b *testing.B, nodes int, d time.Duration, qps, window string) (last time.Duration) {
	env := startCluster(b)
	createNodes(b, env.Client, nodes, map[string]string{"wasm": "true"}, "node")
	k := startKubelet(b, env, d, nil)

	bin := testutil.GoBuild(b, "./cmd/shimkit-operator", filepath.Join(b.TempDir(), "shimkit-operator"))
	kubeconfig := testutil.WriteKubeconfig(b, env.Config, filepath.Join(b.TempDir(), "kubeconfig"))
	metricsAddr := freeAddr(b)

	for b.Loop() {
		ctx, cancel := context.WithCancel(context.Background())
		args := []string{"--kubeconfig", kubeconfig, "--installer-image", "shimkit-installer:bench",
			"--namespace", jobNamespace, "--metrics-bind-address", metricsAddr, "--health-probe-bind-address", "0"}
		if qps != "" {
			args = append(args, "--kube-api-qps", qps)
		}
		if window != "" {
			args = append(args, "--batch-window", window)
		}
		// More of the operator's flags, say a memory limit as a
		// deployment's would set it.
		args = append(args, strings.Fields(os.Getenv("SHIMKIT_SCALE_OPERATOR_ARGS"))...)
		pprof := os.Getenv("SHIMKIT_SCALE_PPROF") // a file for the operator's CPU profile
		pprofAddr := freeAddr(b)
		if pprof != "" {
			args = append(args, "--pprof-bind-address", pprofAddr)
		}
		cmd := exec.CommandContext(ctx, bin, args...)
		logPath := filepath.Join(os.TempDir(), "shimkit-scale-operator.log")
		logf, _ := os.Create(logPath)
		cmd.Stdout, cmd.Stderr = logf, logf
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { cancel(); _ = cmd.Wait() })
		// The clock starts with the operator running, as an admin's Shim
		// finds it: its caches synced, its workers started.
		waitFor(b, time.Minute, "the operator's workers", func() (bool, string) {
			data, _ := os.ReadFile(logPath)
			return strings.Contains(string(data), "Starting workers"), logPath
		})
		cpu0, busy0 := machineCPU()
		plane0 := controlPlaneCPU()
		start := time.Now()
		if pprof != "" {
			// The whole rollout: 10 waves of D, and the API server's share
			// of a large one (SHIMKIT_SCALE_PPROF_SECONDS overrides).
			secs := 10*d + 5*time.Second + time.Duration(nodes/100)*100*time.Millisecond
			if v, err := strconv.Atoi(os.Getenv("SHIMKIT_SCALE_PPROF_SECONDS")); err == nil && v > 0 {
				secs = time.Duration(v) * time.Second
			}
			go profile(b, pprofAddr, pprof, secs)
		}
		if err := env.Client.Create(context.Background(), newShim("spin", "spin", "10%", map[string]string{"wasm": "true"})); err != nil {
			b.Fatal(err)
		}
		var peak int64
		waitFor(b, 15*time.Minute, fmt.Sprintf("Ready on %d nodes", nodes), func() (bool, string) {
			peak = max(peak, vmHWM(cmd.Process.Pid))
			return ready(env.Client, "spin")()
		})
		wall := time.Since(start)
		last = wall
		if os.Getenv("SHIMKIT_SCALE_TIMELINE") != "" {
			hist := map[int]int{}
			k.mu.Lock()
			for _, at := range k.seen {
				hist[int(at.Sub(start)/(250*time.Millisecond))]++
			}
			k.mu.Unlock()
			for i := 0; i <= int(wall/(250*time.Millisecond)); i++ {
				b.Logf("t=%5.2fs jobs first seen: %d", float64(i)/4, hist[i])
			}
		}
		cpu1, busy1 := machineCPU()
		operatorCPU := processCPU(cmd.Process.Pid)
		plane1 := controlPlaneCPU()
		requests, writes := scrapeRequests(b, metricsAddr)
		serverLatency(b, env)
		var evs eventsv1.EventList
		var jobs batchv1.JobList
		if err := env.Client.List(context.Background(), &evs); err == nil {
			_ = env.Client.List(context.Background(), &jobs)
			reasons := map[string]int{}
			for _, e := range evs.Items {
				reasons[e.Reason]++
			}
			ops := map[string]int{}
			for _, j := range jobs.Items {
				ops[j.Labels["shim.containerd.x-k8s.io/op"]]++
			}
			b.Logf("%d Jobs by operation: %v; %d Events by reason: %v", len(jobs.Items), ops, len(evs.Items), reasons)
		}
		peak = max(peak, vmHWM(cmd.Process.Pid))
		if heap := os.Getenv("SHIMKIT_SCALE_HEAP"); heap != "" && pprof != "" {
			saveProfile(b, "http://"+pprofAddr+"/debug/pprof/heap", heap)
		}
		b.Logf("operator memory now: %s", memStatus(cmd.Process.Pid))
		cancel()
		_ = cmd.Wait()

		ideal := time.Duration((nodes+nodes/10-1)/(nodes/10)) * d
		b.ReportMetric(wall.Seconds(), "wall-s")
		b.ReportMetric(ideal.Seconds(), "ideal-s")
		b.ReportMetric(wall.Seconds()/ideal.Seconds(), "wall/ideal")
		b.ReportMetric(float64(requests)/float64(nodes), "requests/node")
		b.ReportMetric(float64(writes)/float64(nodes), "writes/node")
		b.ReportMetric(float64(peak)/1024, "peak-RSS-MiB")
		b.ReportMetric(100*float64(busy1-busy0)/float64(cpu1-cpu0), "machine-CPU-%")
		b.ReportMetric(operatorCPU.Seconds(), "operator-CPU-s")
		b.ReportMetric((plane1["kube-apiserver"] - plane0["kube-apiserver"]).Seconds(), "apiserver-CPU-s")
		b.ReportMetric((plane1["etcd"] - plane0["etcd"]).Seconds(), "etcd-CPU-s")
		b.Logf("%d nodes, maxUpdate 10%%, D=%v, QPS %s, batch window %s: Ready after %v (ideal %v), %d API requests (%d writes), peak RSS %d KiB, operator CPU %v, kube-apiserver CPU %v, etcd CPU %v, machine busy %.0f%%",
			nodes, d, orDefault(qps), orDefault(window), wall.Round(time.Millisecond), ideal, requests, writes, peak, operatorCPU,
			plane1["kube-apiserver"]-plane0["kube-apiserver"], plane1["etcd"]-plane0["etcd"], 100*float64(busy1-busy0)/float64(cpu1-cpu0))
	}
	return last
}

func freeAddr(b *testing.B) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = l.Close() }()
	return l.Addr().String()
}

// vmHWM is a process's peak resident set, in KiB.
func vmHWM(pid int) int64 {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for line := range strings.SplitSeq(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			n, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return n
		}
	}
	return 0
}

// memStatus is a process's resident memory by kind (/proc/<pid>/status):
// anonymous (the Go heap and runtime) and file-backed (its binary).
func memStatus(pid int) string {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return err.Error()
	}
	var out []string
	for line := range strings.SplitSeq(string(data), "\n") {
		for _, k := range []string{"VmHWM:", "VmRSS:", "RssAnon:", "RssFile:"} {
			if v, ok := strings.CutPrefix(line, k); ok {
				out = append(out, k+" "+strings.TrimSpace(v))
			}
		}
	}
	return strings.Join(out, ", ")
}

// machineCPU returns the machine's CPU time so far, all and busy (not
// idle or iowait), in clock ticks (/proc/stat).
func machineCPU() (all, busy int64) {
	data, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 1, 0
	}
	line, _, _ := strings.Cut(string(data), "\n")
	for i, f := range strings.Fields(line)[1:] {
		n, _ := strconv.ParseInt(f, 10, 64)
		all += n
		if i != 3 && i != 4 { // idle, iowait
			busy += n
		}
	}
	return all, busy
}

// controlPlaneCPU is the CPU time of this test's kube-apiserver and etcd
// (its child processes of those names), by name.
func controlPlaneCPU() map[string]time.Duration {
	out := map[string]time.Duration{}
	dirs, _ := os.ReadDir("/proc")
	for _, d := range dirs {
		pid, err := strconv.Atoi(d.Name())
		if err != nil {
			continue
		}
		data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			continue
		}
		comm, rest, ok := strings.Cut(string(data), ") ")
		if !ok {
			continue
		}
		_, comm, _ = strings.Cut(comm, "(")
		f := strings.Fields(rest)
		if ppid, _ := strconv.Atoi(f[1]); ppid != os.Getpid() || comm != "kube-apiserver" && comm != "etcd" {
			continue
		}
		out[comm] += processCPU(pid)
	}
	return out
}

// processCPU is a process's user and system CPU time (/proc/<pid>/stat,
// in clock ticks of 10 ms).
func processCPU(pid int) time.Duration {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	_, rest, _ := strings.Cut(string(data), ") ")
	f := strings.Fields(rest)
	utime, _ := strconv.ParseInt(f[11], 10, 64)
	stime, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(utime+stime) * 10 * time.Millisecond
}

// profile writes the operator's CPU profile over d to file.
func profile(b *testing.B, addr, file string, d time.Duration) {
	saveProfile(b, fmt.Sprintf("http://%s/debug/pprof/profile?seconds=%d", addr, int(d.Seconds())), file)
}

// saveProfile writes what the operator's pprof endpoint url answers to
// file.
func saveProfile(b *testing.B, url, file string) {
	var resp *http.Response
	var err error
	for range 50 { // until the operator listens
		if resp, err = http.Get(url); err == nil {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err != nil {
		b.Logf("profile: %v", err)
		return
	}
	defer func() { _ = resp.Body.Close() }()
	data, err := io.ReadAll(resp.Body)
	if err == nil {
		err = os.WriteFile(file, data, 0o644)
	}
	if err != nil {
		b.Logf("profile: %v", err)
	}
}

// serverLatency logs the API server's requests and their mean latency by
// verb and resource (its apiserver_request_duration_seconds, for the whole
// run: the nodes' creation and the stand-in kubelet's Job status updates
// too; the rest is the operator's).
func serverLatency(b *testing.B, env *testutil.Env) {
	rc, err := rest.RESTClientFor(restConfigForRaw(env.Config))
	if err != nil {
		b.Logf("API server metrics: %v", err)
		return
	}
	body, err := rc.Get().AbsPath("/metrics").DoRaw(context.Background())
	if err != nil {
		b.Logf("API server metrics: %v", err)
		return
	}
	sum, count := map[string]float64{}, map[string]float64{}
	for line := range strings.SplitSeq(string(body), "\n") {
		name, rest, ok := strings.Cut(line, "{")
		if !ok || name != "apiserver_request_duration_seconds_sum" && name != "apiserver_request_duration_seconds_count" {
			continue
		}
		label := func(k string) string {
			_, v, _ := strings.Cut(rest, k+`="`)
			v, _, _ = strings.Cut(v, `"`)
			return v
		}
		key := label("verb") + " " + label("resource") + label("subresource")
		f := strings.Fields(line)
		v, _ := strconv.ParseFloat(f[len(f)-1], 64)
		if strings.HasSuffix(name, "_sum") {
			sum[key] += v
		} else {
			count[key] += v
		}
	}
	keys := slices.Sorted(maps.Keys(count))
	for _, k := range keys {
		if n := count[k]; n > 0 && !strings.HasPrefix(k, "WATCH") {
			b.Logf("API server: %s: %.0f requests, mean %v", k, n, time.Duration(sum[k]/n*float64(time.Second)).Round(100*time.Microsecond))
		}
	}
}

func restConfigForRaw(c *rest.Config) *rest.Config {
	c = rest.CopyConfig(c)
	c.GroupVersion = &schema.GroupVersion{}
	c.NegotiatedSerializer = scheme.Codecs.WithoutConversion()
	return c
}

// scrapeRequests sums the operator's rest_client_requests_total, and the
// writes among them (every method but GET), and logs them by method.
func scrapeRequests(b *testing.B, addr string) (total, writes int64) {
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	byMethod := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		for _, m := range []string{"controller_runtime_reconcile_time_seconds_sum", "controller_runtime_reconcile_time_seconds_count", "workqueue_queue_duration_seconds_sum", "workqueue_queue_duration_seconds_count"} {
			if strings.HasPrefix(line, m+"{") && strings.Contains(line, `"shim"`) {
				b.Logf("%s", line)
			}
		}
		if strings.HasPrefix(line, "rest_client_requests_total{") {
			f := strings.Fields(line)
			v, _ := strconv.ParseFloat(f[len(f)-1], 64)
			total += int64(v)
			if _, m, ok := strings.Cut(line, `method="`); ok {
				m, _, _ = strings.Cut(m, `"`)
				if _, code, ok := strings.Cut(line, `code="`); ok {
					code, _, _ = strings.Cut(code, `"`)
					byMethod[m+" "+code] += v
				}
				if m != "GET" {
					writes += int64(v)
				}
			}
		}
	}
	b.Logf("API requests by method: %v", byMethod)

	return total, writes
}
