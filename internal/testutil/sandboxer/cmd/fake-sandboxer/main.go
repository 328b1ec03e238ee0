// Command fake-sandboxer is a sandbox controller daemon for tests: it serves
// containerd's sandbox Controller gRPC service (the API of a proxy plugin of
// type "sandbox", as Kuasar and runwasi sandboxers do) on a unix socket and
// records every call as one JSON line ({"method":..., "sandbox_id":...,
// "sandboxer":...}) in the calls file. It runs no workload: a started
// sandbox is "ready" until it is stopped.
//
//	fake-sandboxer -socket /run/vmm.sock -calls /tmp/calls.jsonl
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"net"
	"os"
	"os/signal"
	"runtime"
	"sync"
	"syscall"
	"time"

	sandboxapi "github.com/containerd/containerd/api/services/sandbox/v1"
	"github.com/containerd/containerd/api/types"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/timestamppb"
)

func main() {
	socket := flag.String("socket", "", "unix socket to serve the sandbox Controller service on")
	calls := flag.String("calls", "", "file the calls are appended to, one JSON line each")
	flag.Parse()
	if *socket == "" || *calls == "" {
		log.Fatal("fake-sandboxer: -socket and -calls are required")
	}
	f, err := os.OpenFile(*calls, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		log.Fatal(err)
	}
	_ = os.Remove(*socket)
	l, err := net.Listen("unix", *socket)
	if err != nil {
		log.Fatal(err)
	}
	srv := grpc.NewServer()
	sandboxapi.RegisterControllerServer(srv, &controller{calls: f, sandboxes: map[string]*sandbox{}})
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	go func() { <-sig; srv.Stop() }()
	fmt.Fprintln(os.Stderr, "fake-sandboxer: serving on", *socket)
	if err := srv.Serve(l); err != nil {
		log.Fatal(err)
	}
}

type sandbox struct {
	created time.Time
	started bool
	exited  chan struct{} // closed by Stop
	exitAt  time.Time
}

// controller implements every method of the Controller service, with
// sandboxes that do nothing. The embedded Unimplemented server is gRPC's
// required forward-compatibility embedding: only a method a later API adds
// would answer Unimplemented.
type controller struct {
	sandboxapi.UnimplementedControllerServer
	mu        sync.Mutex
	calls     *os.File
	sandboxes map[string]*sandbox
}

func (c *controller) record(method, id, sandboxer string) {
	line, _ := json.Marshal(map[string]string{"method": method, "sandbox_id": id, "sandboxer": sandboxer})
	c.mu.Lock()
	defer c.mu.Unlock()
	_, _ = c.calls.Write(append(line, '\n'))
}

func (c *controller) get(id string) (*sandbox, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if sb, ok := c.sandboxes[id]; ok {
		return sb, nil
	}
	return nil, status.Errorf(codes.NotFound, "sandbox %s not found", id)
}

func (c *controller) Create(_ context.Context, r *sandboxapi.ControllerCreateRequest) (*sandboxapi.ControllerCreateResponse, error) {
	c.record("Create", r.GetSandboxID(), r.GetSandboxer())
	c.mu.Lock()
	c.sandboxes[r.GetSandboxID()] = &sandbox{created: time.Now(), exited: make(chan struct{})}
	c.mu.Unlock()
	return &sandboxapi.ControllerCreateResponse{SandboxID: r.GetSandboxID()}, nil
}

func (c *controller) Start(_ context.Context, r *sandboxapi.ControllerStartRequest) (*sandboxapi.ControllerStartResponse, error) {
	c.record("Start", r.GetSandboxID(), r.GetSandboxer())
	sb, err := c.get(r.GetSandboxID())
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	sb.started = true
	c.mu.Unlock()
	return &sandboxapi.ControllerStartResponse{
		SandboxID: r.GetSandboxID(), Pid: uint32(os.Getpid()), CreatedAt: timestamppb.New(sb.created),
		Labels: map[string]string{"fake-sandboxer": "true"},
	}, nil
}

func (c *controller) Platform(_ context.Context, r *sandboxapi.ControllerPlatformRequest) (*sandboxapi.ControllerPlatformResponse, error) {
	c.record("Platform", r.GetSandboxID(), r.GetSandboxer())
	return &sandboxapi.ControllerPlatformResponse{Platform: &types.Platform{OS: "linux", Architecture: runtime.GOARCH}}, nil
}

func (c *controller) Stop(_ context.Context, r *sandboxapi.ControllerStopRequest) (*sandboxapi.ControllerStopResponse, error) {
	c.record("Stop", r.GetSandboxID(), r.GetSandboxer())
	sb, err := c.get(r.GetSandboxID())
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	select {
	case <-sb.exited:
	default:
		sb.exitAt = time.Now()
		close(sb.exited)
	}
	return &sandboxapi.ControllerStopResponse{}, nil
}

func (c *controller) Wait(ctx context.Context, r *sandboxapi.ControllerWaitRequest) (*sandboxapi.ControllerWaitResponse, error) {
	c.record("Wait", r.GetSandboxID(), r.GetSandboxer())
	sb, err := c.get(r.GetSandboxID())
	if err != nil {
		return nil, err
	}
	select {
	case <-sb.exited:
	case <-ctx.Done():
		return nil, status.FromContextError(ctx.Err()).Err()
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return &sandboxapi.ControllerWaitResponse{ExitStatus: 0, ExitedAt: timestamppb.New(sb.exitAt)}, nil
}

func (c *controller) Status(_ context.Context, r *sandboxapi.ControllerStatusRequest) (*sandboxapi.ControllerStatusResponse, error) {
	c.record("Status", r.GetSandboxID(), r.GetSandboxer())
	sb, err := c.get(r.GetSandboxID())
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	resp := &sandboxapi.ControllerStatusResponse{SandboxID: r.GetSandboxID(), Pid: uint32(os.Getpid()), State: "SANDBOX_READY", CreatedAt: timestamppb.New(sb.created)}
	select {
	case <-sb.exited:
		resp.State, resp.ExitedAt = "SANDBOX_NOTREADY", timestamppb.New(sb.exitAt)
	default:
	}
	return resp, nil
}

func (c *controller) Shutdown(_ context.Context, r *sandboxapi.ControllerShutdownRequest) (*sandboxapi.ControllerShutdownResponse, error) {
	c.record("Shutdown", r.GetSandboxID(), r.GetSandboxer())
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.sandboxes, r.GetSandboxID())
	return &sandboxapi.ControllerShutdownResponse{}, nil
}

func (c *controller) Metrics(_ context.Context, r *sandboxapi.ControllerMetricsRequest) (*sandboxapi.ControllerMetricsResponse, error) {
	c.record("Metrics", r.GetSandboxID(), r.GetSandboxer())
	return &sandboxapi.ControllerMetricsResponse{}, nil
}

func (c *controller) Update(_ context.Context, r *sandboxapi.ControllerUpdateRequest) (*sandboxapi.ControllerUpdateResponse, error) {
	c.record("Update", r.GetSandboxID(), r.GetSandboxer())
	return &sandboxapi.ControllerUpdateResponse{}, nil
}
