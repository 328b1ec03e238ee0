package operator_test

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

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
		d   time.Duration
		qps string
	}{{time.Second, ""}, {time.Second, "50"}, {5 * time.Second, ""}} {
		b.Run(fmt.Sprintf("D=%v/qps=%s", c.d, orDefault(c.qps)), func(b *testing.B) { scale(b, nodes, c.d, c.qps) })
	}
}

// BenchmarkScale5000Nodes is the same rollout on 5,000 nodes, for the
// operator's peak memory.
func BenchmarkScale5000Nodes(b *testing.B) {
	b.Run("D=1s/qps=default", func(b *testing.B) { scale(b, 5000, time.Second, "") })
}

func orDefault(qps string) string {
	if qps == "" {
		return "default"
	}
	return qps
}

func scale(b *testing.B, nodes int, d time.Duration, qps string) {
	env := startCluster(b)
	createNodes(b, env.Client, nodes, map[string]string{"wasm": "true"}, "node")
	k := startKubelet(b, env, d, nil)

	bin := filepath.Join(b.TempDir(), "shimkit-operator")
	build := exec.Command("go", "build", "-o", bin, "./cmd/shimkit-operator")
	build.Dir = testutil.RepoRoot()
	if out, err := build.CombinedOutput(); err != nil {
		b.Fatalf("build: %v\n%s", err, out)
	}
	kubeconfig := testutil.WriteKubeconfig(b, env.Config, filepath.Join(b.TempDir(), "kubeconfig"))
	metricsAddr := freeAddr(b)

	for b.Loop() {
		ctx, cancel := context.WithCancel(context.Background())
		args := []string{"--kubeconfig", kubeconfig, "--installer-image", "shimkit-installer:bench",
			"--namespace", jobNamespace, "--metrics-bind-address", metricsAddr, "--health-probe-bind-address", "0"}
		if qps != "" {
			args = append(args, "--kube-api-qps", qps)
		}
		cmd := exec.CommandContext(ctx, bin, args...)
		logf, _ := os.Create(filepath.Join(os.TempDir(), "shimkit-scale-operator.log"))
		cmd.Stdout, cmd.Stderr = logf, logf
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { cancel(); _ = cmd.Wait() })
		start := time.Now()
		if err := env.Client.Create(context.Background(), newShim("spin", "spin", "10%", map[string]string{"wasm": "true"})); err != nil {
			b.Fatal(err)
		}
		var peak int64
		waitFor(b, 15*time.Minute, fmt.Sprintf("Ready on %d nodes", nodes), func() (bool, string) {
			peak = max(peak, vmHWM(cmd.Process.Pid))
			return ready(env.Client, "spin")()
		})
		wall := time.Since(start)
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
		requests := scrapeRequests(b, metricsAddr)
		peak = max(peak, vmHWM(cmd.Process.Pid))
		cancel()
		_ = cmd.Wait()

		ideal := time.Duration((nodes+nodes/10-1)/(nodes/10)) * d
		b.ReportMetric(wall.Seconds(), "wall-s")
		b.ReportMetric(ideal.Seconds(), "ideal-s")
		b.ReportMetric(wall.Seconds()/ideal.Seconds(), "wall/ideal")
		b.ReportMetric(float64(requests)/float64(nodes), "requests/node")
		b.ReportMetric(float64(peak)/1024, "peak-RSS-MiB")
		b.Logf("%d nodes, maxUpdate 10%%, D=%v, QPS %s: Ready after %v (ideal %v), %d API requests, peak RSS %d KiB", nodes, d, orDefault(qps), wall.Round(time.Millisecond), ideal, requests, peak)
	}
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

// scrapeRequests sums the operator's rest_client_requests_total, and logs
// them by method.
func scrapeRequests(b *testing.B, addr string) int64 {
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	var total float64
	byMethod := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "rest_client_requests_total{") {
			f := strings.Fields(line)
			v, _ := strconv.ParseFloat(f[len(f)-1], 64)
			total += v
			if _, m, ok := strings.Cut(line, `method="`); ok {
				m, _, _ = strings.Cut(m, `"`)
				byMethod[m] += v
			}
		}
	}
	b.Logf("API requests by method: %v", byMethod)
	return int64(total)
}
