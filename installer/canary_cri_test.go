package installer_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"path"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/shimkit/shimkit/installer"
	"github.com/shimkit/shimkit/installer/plan"
)

// The node tests have no kubelet: their canary runs the pod through
// containerd's CRI directly, the way kubelet would. (On a node with a
// kubelet that would not do: kubelet kills and removes sandboxes it does
// not know; there the canary is a Pod, package canarypod.)

// Canary pods' identity on the node: their CRI namespace, and where
// their logs go (a node path).
const (
	canaryNamespace = "shimkit-canary"
	canaryLogRoot   = "/var/log/shimkit-canary"
	canaryLogTail   = 1024
)

// criCanary runs the canary as kubelet runs a pod of the handler's
// RuntimeClass: CRI RunPodSandbox with the handler, on the node's network
// (no CNI involved), then one container; the sandbox and its logs are
// removed afterwards, whatever happened.
type criCanary struct {
	// Socket is containerd's socket on this machine.
	Socket string
	// HostRoot is the node's / on this machine (its logs are read there).
	HostRoot string
	// LogRoot is where the canaries' logs go, a node path; default
	// canaryLogRoot.
	LogRoot string
	// CgroupParent and PidPerContainer shape the sandbox for the test
	// harness's CRI-O (testutil.CRIO): under its cgroup parent, and with a
	// pid namespace per container, so that CRI-O drops the infra
	// container this machine cannot start.
	CgroupParent    string
	PidPerContainer bool
}

// RunCanary runs c and wraps installer.ErrCanaryFailed when it fails; the message
// has the container's exit code and the tail of its log.
func (k *criCanary) RunCanary(ctx context.Context, c plan.Canary) error {
	ctx, cancel := context.WithTimeout(ctx, time.Duration(c.Timeout))
	defer cancel()
	conn, err := grpc.NewClient("unix://"+k.Socket, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return fmt.Errorf("%w: %s: %w", installer.ErrCanaryFailed, k.Socket, err)
	}
	defer conn.Close()
	if err := ensureImage(ctx, runtimeapi.NewImageServiceClient(conn), c.Image); err != nil {
		return fmt.Errorf("%w: image %s: %w", installer.ErrCanaryFailed, c.Image, err)
	}
	p := &canaryPod{rt: runtimeapi.NewRuntimeServiceClient(conn), c: c, root: orDefault(k.HostRoot, "/"), k: k}
	defer p.remove(ctx)
	if err := p.run(ctx); err != nil {
		return fmt.Errorf("%w: handler %s, image %s: %w", installer.ErrCanaryFailed, c.Handler, c.Image, err)
	}
	return nil
}

// ensureImage pulls the image when the node does not have it.
func ensureImage(ctx context.Context, is runtimeapi.ImageServiceClient, image string) error {
	spec := &runtimeapi.ImageSpec{Image: image}
	st, err := is.ImageStatus(ctx, &runtimeapi.ImageStatusRequest{Image: spec})
	if err != nil {
		return fmt.Errorf("CRI ImageStatus: %w", err)
	}
	if st.GetImage() != nil {
		return nil
	}
	if _, err := is.PullImage(ctx, &runtimeapi.PullImageRequest{Image: spec}); err != nil {
		return fmt.Errorf("CRI PullImage: %w", err)
	}
	return nil
}

// canaryPod is one canary run: its sandbox, container and log directory.
type canaryPod struct {
	rt        runtimeapi.RuntimeServiceClient
	c         plan.Canary
	k         *criCanary
	root      string
	logDir    string // node path
	sandboxID string
	cfg       *runtimeapi.PodSandboxConfig
}

func (p *canaryPod) run(ctx context.Context) error {
	uid := make([]byte, 8)
	_, _ = rand.Read(uid)
	id := hex.EncodeToString(uid)
	p.logDir = path.Join(orDefault(p.k.LogRoot, canaryLogRoot), id)
	if err := os.MkdirAll(p.local(p.logDir), 0o755); err != nil {
		return err
	}
	ns := &runtimeapi.NamespaceOption{Network: runtimeapi.NamespaceMode_NODE}
	if p.k.PidPerContainer {
		ns.Pid = runtimeapi.NamespaceMode_CONTAINER
	}
	p.cfg = &runtimeapi.PodSandboxConfig{
		Metadata:     &runtimeapi.PodSandboxMetadata{Name: "canary-" + p.c.Handler, Uid: id, Namespace: canaryNamespace},
		LogDirectory: p.logDir,
		Labels:       map[string]string{"shimkit.dev/canary": p.c.Handler},
		Linux: &runtimeapi.LinuxPodSandboxConfig{CgroupParent: p.k.CgroupParent, SecurityContext: &runtimeapi.LinuxSandboxSecurityContext{
			NamespaceOptions: ns,
		}},
	}
	sb, err := p.rt.RunPodSandbox(ctx, &runtimeapi.RunPodSandboxRequest{Config: p.cfg, RuntimeHandler: p.c.Handler})
	if err != nil {
		return fmt.Errorf("CRI RunPodSandbox: %w", err)
	}
	p.sandboxID = sb.GetPodSandboxId()
	ct, err := p.rt.CreateContainer(ctx, &runtimeapi.CreateContainerRequest{
		PodSandboxId: p.sandboxID, SandboxConfig: p.cfg,
		Config: &runtimeapi.ContainerConfig{
			Metadata: &runtimeapi.ContainerMetadata{Name: "canary"},
			Image:    &runtimeapi.ImageSpec{Image: p.c.Image, UserSpecifiedImage: p.c.Image},
			Command:  p.c.Command, Args: p.c.Args, LogPath: "canary.log",
			Linux: &runtimeapi.LinuxContainerConfig{SecurityContext: &runtimeapi.LinuxContainerSecurityContext{NamespaceOptions: ns}},
		},
	})
	if err != nil {
		return fmt.Errorf("CRI CreateContainer: %w", err)
	}
	if _, err := p.rt.StartContainer(ctx, &runtimeapi.StartContainerRequest{ContainerId: ct.GetContainerId()}); err != nil {
		return fmt.Errorf("CRI StartContainer: %w%s", err, p.logTail())
	}
	return p.wait(ctx, ct.GetContainerId())
}

// wait polls the container until it exits.
func (p *canaryPod) wait(ctx context.Context, id string) error {
	for {
		st, err := p.rt.ContainerStatus(ctx, &runtimeapi.ContainerStatusRequest{ContainerId: id})
		if err != nil {
			return fmt.Errorf("CRI ContainerStatus: %w%s", err, p.logTail())
		}
		if s := st.GetStatus(); s.GetState() == runtimeapi.ContainerState_CONTAINER_EXITED {
			if s.GetExitCode() == 0 {
				return nil
			}
			return fmt.Errorf("the container exited %d (%s %s)%s", s.GetExitCode(), s.GetReason(), s.GetMessage(), p.logTail())
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("the container did not exit in time: %w%s", ctx.Err(), p.logTail())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// logTail is the end of the container's log, for the failure message.
func (p *canaryPod) logTail() string {
	data, err := os.ReadFile(p.local(path.Join(p.logDir, "canary.log")))
	if err != nil || len(data) == 0 {
		return ""
	}
	if len(data) > canaryLogTail {
		data = data[len(data)-canaryLogTail:]
	}
	return "; log: " + strings.TrimSpace(string(data))
}

// remove stops and removes the sandbox (and its container) and the logs,
// with its own deadline: the canary's may be what ran out.
func (p *canaryPod) remove(ctx context.Context) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	if p.sandboxID != "" {
		_, _ = p.rt.StopPodSandbox(ctx, &runtimeapi.StopPodSandboxRequest{PodSandboxId: p.sandboxID})
		_, _ = p.rt.RemovePodSandbox(ctx, &runtimeapi.RemovePodSandboxRequest{PodSandboxId: p.sandboxID})
	}
	if p.logDir != "" {
		_ = os.RemoveAll(p.local(p.logDir))
	}
}

func (p *canaryPod) local(nodePath string) string { return path.Join(p.root, nodePath) }
