package runtime

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/shimkit/shimkit/installer/plan"
)

var (
	_ HealthChecker = (*CRIHealth)(nil)
	_ Versioner     = (*CRIHealth)(nil)
)

// ErrUnhealthy: containerd did not become ready as wanted in time.
var ErrUnhealthy = errors.New("containerd is not healthy")

// CRIHealth asks containerd over CRI on its socket: RuntimeReady, and the
// handler among runtimeHandlers (containerd 2.x) or in the verbose config
// (1.x).
type CRIHealth struct {
	// Socket is the path of containerd's socket on this machine.
	Socket string
	// Timeout bounds one Check; default 30s.
	Timeout time.Duration
}

// Check polls CRI Status until it is satisfied or the timeout passes.
func (h *CRIHealth) Check(ctx context.Context, handler string, present bool) error {
	timeout := h.Timeout
	if timeout <= 0 {
		timeout = plan.DefaultRestartTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	conn, err := grpc.NewClient("unix://"+h.Socket, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return fmt.Errorf("%w: %s: %w", ErrUnhealthy, h.Socket, err)
	}
	defer conn.Close()
	rt := runtimeapi.NewRuntimeServiceClient(conn)
	var last error
	for {
		last = h.once(ctx, rt, handler, present)
		if last == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w within %v: %w", ErrUnhealthy, timeout, last)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func (h *CRIHealth) once(ctx context.Context, rt runtimeapi.RuntimeServiceClient, handler string, present bool) error {
	cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	st, err := rt.Status(cctx, &runtimeapi.StatusRequest{Verbose: true})
	if err != nil {
		return fmt.Errorf("CRI Status: %w", err)
	}
	ready := false
	for _, c := range st.GetStatus().GetConditions() {
		if c.Type == runtimeapi.RuntimeReady {
			ready = c.Status
		}
	}
	if !ready {
		return errors.New("RuntimeReady is false")
	}
	if handler == "" {
		return nil
	}
	handlers, err := registeredHandlers(st)
	if err != nil {
		return err
	}
	if slices.Contains(handlers, handler) != present {
		if present {
			return fmt.Errorf("handler %s is not registered (have %v)", handler, handlers)
		}
		return fmt.Errorf("handler %s is still registered", handler)
	}
	return nil
}

// registeredHandlers reads the handlers containerd serves: runtimeHandlers
// on 2.x, the CRI config's runtimes on 1.x.
func registeredHandlers(st *runtimeapi.StatusResponse) ([]string, error) {
	var out []string
	for _, h := range st.GetRuntimeHandlers() {
		if h.Name != "" {
			out = append(out, h.Name)
		}
	}
	if len(out) > 0 {
		return out, nil
	}
	var cfg struct {
		Containerd struct {
			Runtimes map[string]json.RawMessage `json:"runtimes"`
		} `json:"containerd"`
	}
	if err := json.Unmarshal([]byte(st.GetInfo()["config"]), &cfg); err != nil {
		return nil, fmt.Errorf("CRI verbose config: %w", err)
	}
	for name := range cfg.Containerd.Runtimes {
		out = append(out, name)
	}
	slices.Sort(out)
	return out, nil
}

// RuntimeVersion asks containerd over CRI (runtimeVersion of Version).
func (h *CRIHealth) RuntimeVersion(ctx context.Context) (string, error) {
	conn, err := grpc.NewClient("unix://"+h.Socket, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return "", fmt.Errorf("%s: %w", h.Socket, err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	v, err := runtimeapi.NewRuntimeServiceClient(conn).Version(ctx, &runtimeapi.VersionRequest{})
	if err != nil {
		return "", fmt.Errorf("CRI Version on %s: %w", h.Socket, err)
	}
	return v.GetRuntimeVersion(), nil
}
