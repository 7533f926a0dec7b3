// Package cri serves Kubernetes' Container Runtime Interface (CRI v1) from
// dockerd: the kubelet (or crictl, critest) talks gRPC on a unix socket and
// the engine runs its pods.
//
// A pod sandbox is not a container here: its network, IPC and UTS
// namespaces are pinned as files (cri/podns), its network comes from CNI
// (cri/cni), and its /etc files and /dev/shm live in a directory of its own;
// no pause image is pulled or run. A pod's containers are ordinary engine
// containers (so `docker ps` shows them, named k8s_...) that join what the
// sandbox pinned (runconfig.Pod). Exec, attach and port-forward go through
// the streaming server (cri/stream).
package cri

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"time"

	"google.golang.org/grpc"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/sdengine/engine/api/server/backend"
	"github.com/sdengine/engine/cri/cni"
)

// Backend is what the CRI asks of the engine: the Docker API's backend
// (containers, images, pulls) and the calls only Kubernetes makes.
type Backend interface {
	backend.System
	backend.Containers
	backend.Images
	backend.Distribution
	// ContainerReopenLog makes the container's log driver reopen its file
	// (the kubelet renamed it to rotate it).
	ContainerReopenLog(ctx context.Context, name string) error
	// ContainerExecSync runs cmd in the container and waits for it; after
	// timeout (0: none) the process is killed and timedOut is true.
	ContainerExecSync(ctx context.Context, name string, cmd []string, timeout time.Duration, stdout, stderr io.Writer) (code int, timedOut bool, err error)
}

// Streamer hands out the URLs of the streaming server (cri/stream) that
// exec, attach and port-forward connect to.
type Streamer interface {
	GetExec(*runtimeapi.ExecRequest) (*runtimeapi.ExecResponse, error)
	GetAttach(*runtimeapi.AttachRequest) (*runtimeapi.AttachResponse, error)
	GetPortForward(*runtimeapi.PortForwardRequest) (*runtimeapi.PortForwardResponse, error)
}

// Config is the CRI's part of the daemon's configuration.
type Config struct {
	// Root keeps the sandboxes' records (below the data root); RunRoot
	// their pinned namespaces, /etc files and /dev/shm (below the exec
	// root: gone at reboot, as the namespaces are).
	Root, RunRoot string
	CNI           cni.Config
	// SystemdCgroup says which cgroup driver the engine uses; the kubelet
	// must use the same (RuntimeConfig).
	SystemdCgroup bool
	// InfraBinary is the shim binary, run as the infra process of pods
	// that share a PID namespace (cri/podinfra).
	InfraBinary string
	// EngineVersion is reported by Version.
	EngineVersion string
}

// Server implements CRI's RuntimeService and ImageService.
type Server struct {
	runtimeapi.UnimplementedRuntimeServiceServer
	runtimeapi.UnimplementedImageServiceServer

	cfg     Config
	b       Backend
	net     *cni.Manager
	pods    *sandboxStore
	streams Streamer
}

// New loads the sandboxes' records and prepares CNI. streams may be nil
// until SetStreamer is called.
func New(cfg Config, b Backend) (*Server, error) {
	for _, d := range []string{cfg.Root, cfg.RunRoot} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return nil, fmt.Errorf("cri: %w", err)
		}
	}
	n, err := cni.New(cfg.CNI)
	if err != nil {
		return nil, fmt.Errorf("cri: %w", err)
	}
	pods, err := loadSandboxes(filepath.Join(cfg.Root, "sandboxes"))
	if err != nil {
		return nil, fmt.Errorf("cri: %w", err)
	}
	return &Server{cfg: cfg, b: b, net: n, pods: pods}, nil
}

// SetStreamer sets the streaming server that exec, attach and port-forward
// use.
func (s *Server) SetStreamer(st Streamer) { s.streams = st }

// Serve answers CRI calls on l until ctx ends.
func (s *Server) Serve(ctx context.Context, l net.Listener) error {
	g := grpc.NewServer(grpc.UnaryInterceptor(logErrors), grpc.MaxRecvMsgSize(16<<20), grpc.MaxSendMsgSize(16<<20))
	runtimeapi.RegisterRuntimeServiceServer(g, s)
	runtimeapi.RegisterImageServiceServer(g, s)
	go func() {
		<-ctx.Done()
		g.GracefulStop()
	}()
	if err := g.Serve(l); err != nil && !errors.Is(err, grpc.ErrServerStopped) {
		return fmt.Errorf("cri: serve: %w", err)
	}
	return nil
}

// logErrors logs each failed call at debug level and turns the engine's
// error classes into gRPC codes (errors.go).
func logErrors(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
	resp, err := h(ctx, req)
	if err != nil {
		err = grpcError(err)
		slog.Debug("cri call failed", "method", info.FullMethod, "err", err)
	}
	return resp, err
}

// runtimeName is what Version reports as the runtime.
const runtimeName = "sdengine"

func (s *Server) Version(ctx context.Context, req *runtimeapi.VersionRequest) (*runtimeapi.VersionResponse, error) {
	return &runtimeapi.VersionResponse{
		Version:           "0.1.0",
		RuntimeName:       runtimeName,
		RuntimeVersion:    s.cfg.EngineVersion,
		RuntimeApiVersion: "v1",
	}, nil
}

func (s *Server) Status(ctx context.Context, req *runtimeapi.StatusRequest) (*runtimeapi.StatusResponse, error) {
	netReady := &runtimeapi.RuntimeCondition{Type: runtimeapi.NetworkReady, Status: true}
	if err := s.net.Status(); err != nil {
		netReady.Status, netReady.Reason, netReady.Message = false, "NetworkPluginNotReady", err.Error()
	}
	resp := &runtimeapi.StatusResponse{
		Status: &runtimeapi.RuntimeStatus{Conditions: []*runtimeapi.RuntimeCondition{
			{Type: runtimeapi.RuntimeReady, Status: true},
			netReady,
		}},
		RuntimeHandlers: []*runtimeapi.RuntimeHandler{
			{Name: "", Features: &runtimeapi.RuntimeHandlerFeatures{RecursiveReadOnlyMounts: true}},
			{Name: defaultHandler, Features: &runtimeapi.RuntimeHandlerFeatures{RecursiveReadOnlyMounts: true}},
		},
		Features: &runtimeapi.RuntimeFeatures{SupplementalGroupsPolicy: true},
	}
	if req.Verbose {
		resp.Info = map[string]string{"cniConfDir": s.cfg.CNI.ConfDir}
	}
	return resp, nil
}

func (s *Server) RuntimeConfig(ctx context.Context, req *runtimeapi.RuntimeConfigRequest) (*runtimeapi.RuntimeConfigResponse, error) {
	driver := runtimeapi.CgroupDriver_CGROUPFS
	if s.cfg.SystemdCgroup {
		driver = runtimeapi.CgroupDriver_SYSTEMD
	}
	return &runtimeapi.RuntimeConfigResponse{Linux: &runtimeapi.LinuxRuntimeConfiguration{CgroupDriver: driver}}, nil
}

// UpdateRuntimeConfig takes the node's pod CIDR; the CNI configuration
// already names the pods' addresses, so there is nothing to change.
func (s *Server) UpdateRuntimeConfig(ctx context.Context, req *runtimeapi.UpdateRuntimeConfigRequest) (*runtimeapi.UpdateRuntimeConfigResponse, error) {
	return &runtimeapi.UpdateRuntimeConfigResponse{}, nil
}
