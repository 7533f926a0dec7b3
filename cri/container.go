package cri

import (
	"bytes"
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	containertypes "github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/sdengine/engine/api/server/backend"
	"github.com/sdengine/engine/pkg/errdefs"
)

func (s *Server) CreateContainer(ctx context.Context, req *runtimeapi.CreateContainerRequest) (*runtimeapi.CreateContainerResponse, error) {
	sb, err := s.readySandbox(req.PodSandboxId)
	if err != nil {
		return nil, err
	}
	cfg := req.GetConfig()
	if cfg.GetMetadata().GetName() == "" {
		return nil, invalid("container config: metadata needs a name")
	}
	if cfg.GetImage().GetImage() == "" {
		return nil, invalid("container config: no image")
	}
	img, err := s.b.ImageInspect(ctx, cfg.Image.Image, nil)
	if err != nil {
		return nil, err
	}
	p, err := createParams(sb, cfg, img.ID)
	if err != nil {
		return nil, err
	}
	resp, err := s.b.ContainerCreate(ctx, p)
	if err != nil {
		if errdefs.IsConflict(err) {
			return nil, alreadyExists(err)
		}
		return nil, err
	}
	return &runtimeapi.CreateContainerResponse{ContainerId: resp.ID}, nil
}

func (s *Server) StartContainer(ctx context.Context, req *runtimeapi.StartContainerRequest) (*runtimeapi.StartContainerResponse, error) {
	c, err := s.inspect(ctx, req.ContainerId)
	if err != nil {
		return nil, err
	}
	if c.State.Status != "created" {
		return nil, status.Errorf(codes.FailedPrecondition, "container %s is %s: only a created container can be started", c.ID, c.State.Status)
	}
	if err := s.b.ContainerStart(ctx, c.ID); err != nil {
		return nil, err
	}
	return &runtimeapi.StartContainerResponse{}, nil
}

// StopContainer is idempotent: stopping a container that is not there
// (any more) succeeds, as the kubelet retries stops.
func (s *Server) StopContainer(ctx context.Context, req *runtimeapi.StopContainerRequest) (*runtimeapi.StopContainerResponse, error) {
	c, err := s.inspect(ctx, req.ContainerId)
	if isNotFound(err) {
		return &runtimeapi.StopContainerResponse{}, nil
	}
	if err != nil {
		return nil, err
	}
	if err := s.stopContainer(ctx, c.ID, int(req.Timeout)); err != nil {
		return nil, err
	}
	return &runtimeapi.StopContainerResponse{}, nil
}

// stopContainer stops a container with its stop signal, then SIGKILL after
// timeout seconds; a container already stopped is fine.
func (s *Server) stopContainer(ctx context.Context, id string, timeout int) error {
	err := s.b.ContainerStop(ctx, id, containertypes.StopOptions{Timeout: &timeout})
	if err != nil && errdefs.ClassOf(err) == errdefs.ClassNotModified {
		return nil
	}
	return err
}

func (s *Server) RemoveContainer(ctx context.Context, req *runtimeapi.RemoveContainerRequest) (*runtimeapi.RemoveContainerResponse, error) {
	c, err := s.inspect(ctx, req.ContainerId)
	if err != nil {
		if isNotFound(err) {
			return &runtimeapi.RemoveContainerResponse{}, nil
		}
		return nil, err
	}
	if err := s.removeContainer(ctx, c.ID); err != nil {
		return nil, err
	}
	return &runtimeapi.RemoveContainerResponse{}, nil
}

// removeContainer removes a container, running or not, with its
// anonymous volumes; one already gone is fine.
func (s *Server) removeContainer(ctx context.Context, id string) error {
	err := s.b.ContainerRemove(ctx, id, containertypes.RemoveOptions{Force: true, RemoveVolumes: true})
	if err != nil && errdefs.IsNotFound(err) {
		return nil
	}
	return err
}

// inspect finds one of the CRI's containers by ID (or unique prefix).
// The engine's other containers are not the CRI's to see.
func (s *Server) inspect(ctx context.Context, id string) (*backend.ContainerInspect, error) {
	if id == "" {
		return nil, invalid("container ID is empty")
	}
	c, err := s.b.ContainerInspect(ctx, id, false)
	if err != nil {
		if errdefs.IsNotFound(err) {
			return nil, notFound("container %q not found", id)
		}
		return nil, err
	}
	if c.Config == nil || c.Config.Labels[labelSandbox] == "" {
		return nil, notFound("container %q not found: it is not a pod's", id)
	}
	return c, nil
}

// podContainers lists the CRI's containers, of one pod when podID is set.
func (s *Server) podContainers(ctx context.Context, podID string) ([]*containertypes.Summary, error) {
	f := filters.NewArgs(filters.Arg("label", labelSandbox))
	if podID != "" {
		f = filters.NewArgs(filters.Arg("label", labelSandbox+"="+podID))
	}
	return s.b.ContainerList(ctx, backend.ListOptions{All: true, Filters: f})
}

func (s *Server) ListContainers(ctx context.Context, req *runtimeapi.ListContainersRequest) (*runtimeapi.ListContainersResponse, error) {
	f := req.GetFilter()
	ctrs, err := s.podContainers(ctx, f.GetPodSandboxId())
	if err != nil {
		return nil, err
	}
	var out []*runtimeapi.Container
	for _, sum := range ctrs {
		if f.GetId() != "" && !strings.HasPrefix(sum.ID, f.GetId()) {
			continue
		}
		if f.GetPodSandboxId() == "" && f != nil && f.PodSandboxId != "" {
			continue
		}
		c, err := s.b.ContainerInspect(ctx, sum.ID, false)
		if err != nil {
			continue // removed meanwhile
		}
		st := containerStatus(c)
		if f.GetState() != nil && f.State.State != st.State {
			continue
		}
		if !matchLabels(st.Labels, f.GetLabelSelector()) {
			continue
		}
		out = append(out, &runtimeapi.Container{
			Id: st.Id, PodSandboxId: c.Config.Labels[labelSandbox], Metadata: st.Metadata,
			Image: st.Image, ImageRef: st.ImageRef, ImageId: st.ImageId, State: st.State, CreatedAt: st.CreatedAt,
			Labels: st.Labels, Annotations: st.Annotations,
		})
	}
	return &runtimeapi.ListContainersResponse{Containers: out}, nil
}

func (s *Server) ContainerStatus(ctx context.Context, req *runtimeapi.ContainerStatusRequest) (*runtimeapi.ContainerStatusResponse, error) {
	c, err := s.inspect(ctx, req.ContainerId)
	if err != nil {
		return nil, err
	}
	resp := &runtimeapi.ContainerStatusResponse{Status: containerStatus(c)}
	if c.State != nil && c.State.Running && c.State.Pid > 0 {
		// The process may have ended meanwhile: no user then.
		resp.Status.User, _ = processUser(c.State.Pid)
	}
	if req.Verbose {
		resp.Info = map[string]string{"pid": strconv.Itoa(c.State.Pid), "sandboxID": c.Config.Labels[labelSandbox]}
	}
	return resp, nil
}

// containerStatus reads a CRI status off the engine's inspect.
func containerStatus(c *backend.ContainerInspect) *runtimeapi.ContainerStatus {
	l := c.Config.Labels
	attempt, _ := strconv.ParseUint(l[labelAttempt], 10, 32)
	st := &runtimeapi.ContainerStatus{
		Id:          c.ID,
		Metadata:    &runtimeapi.ContainerMetadata{Name: l[labelName], Attempt: uint32(attempt)},
		Image:       &runtimeapi.ImageSpec{Image: l[labelImage]},
		ImageRef:    c.Image,
		ImageId:     c.Image,
		CreatedAt:   parseTime(c.Created),
		Labels:      criLabels(l, labelLabels),
		Annotations: criLabels(l, labelAnnotations),
		LogPath:     l[labelLogPath],
	}
	if c.State != nil {
		st.StartedAt = parseTime(c.State.StartedAt)
		switch c.State.Status {
		case "created":
			st.State = runtimeapi.ContainerState_CONTAINER_CREATED
			st.StartedAt = 0
		case "running", "paused", "restarting", "removing":
			st.State = runtimeapi.ContainerState_CONTAINER_RUNNING
		case "exited", "dead":
			st.State = runtimeapi.ContainerState_CONTAINER_EXITED
			st.FinishedAt = parseTime(c.State.FinishedAt)
			st.ExitCode = int32(c.State.ExitCode)
			switch {
			case c.State.OOMKilled:
				st.Reason = "OOMKilled"
			case c.State.ExitCode == 0:
				st.Reason = "Completed"
			default:
				st.Reason = "Error"
			}
			st.Message = c.State.Error
		default:
			st.State = runtimeapi.ContainerState_CONTAINER_UNKNOWN
		}
		if c.State.Status == "removing" && c.State.Pid == 0 {
			st.State = runtimeapi.ContainerState_CONTAINER_EXITED
		}
	}
	for _, m := range c.Mounts {
		if m.Type == "image" {
			st.Mounts = append(st.Mounts, imageVolumeStatus(m, c.HostConfig))
			continue
		}
		if m.Type != "bind" {
			continue
		}
		st.Mounts = append(st.Mounts, &runtimeapi.Mount{
			ContainerPath: m.Destination, HostPath: m.Source, Readonly: !m.RW,
			Propagation: propagationOf(m.Propagation),
		})
	}
	if hc := c.HostConfig; hc != nil {
		st.Resources = &runtimeapi.ContainerResources{Linux: &runtimeapi.LinuxContainerResources{
			CpuPeriod: hc.CPUPeriod, CpuQuota: hc.CPUQuota, CpuShares: hc.CPUShares,
			MemoryLimitInBytes: hc.Memory, MemorySwapLimitInBytes: hc.MemorySwap,
			OomScoreAdj: int64(hc.OomScoreAdj), CpusetCpus: hc.CpusetCpus, CpusetMems: hc.CpusetMems,
		}}
	}
	return st
}

// parseTime reads the engine's RFC 3339 times as CRI's nanoseconds; the
// zero time is 0.
func parseTime(s string) int64 {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil || t.IsZero() || t.Year() < 2 {
		return 0
	}
	return t.UnixNano()
}

func (s *Server) UpdateContainerResources(ctx context.Context, req *runtimeapi.UpdateContainerResourcesRequest) (*runtimeapi.UpdateContainerResourcesResponse, error) {
	c, err := s.inspect(ctx, req.ContainerId)
	if err != nil {
		return nil, err
	}
	if r := req.GetLinux(); r != nil {
		if _, err := s.b.ContainerUpdate(ctx, c.ID, &containertypes.UpdateConfig{Resources: resources(r)}); err != nil {
			return nil, err
		}
	}
	return &runtimeapi.UpdateContainerResourcesResponse{}, nil
}

func (s *Server) ReopenContainerLog(ctx context.Context, req *runtimeapi.ReopenContainerLogRequest) (*runtimeapi.ReopenContainerLogResponse, error) {
	c, err := s.inspect(ctx, req.ContainerId)
	if err != nil {
		return nil, err
	}
	if err := s.b.ContainerReopenLog(ctx, c.ID); err != nil {
		return nil, err
	}
	return &runtimeapi.ReopenContainerLogResponse{}, nil
}

// ExecSync runs a command and answers with its output and exit code. At
// its timeout the process is killed (never left running) and the call
// fails with DeadlineExceeded, which the kubelet reads as a timed-out
// probe.
func (s *Server) ExecSync(ctx context.Context, req *runtimeapi.ExecSyncRequest) (*runtimeapi.ExecSyncResponse, error) {
	if len(req.Cmd) == 0 {
		return nil, invalid("exec: no command")
	}
	c, err := s.inspect(ctx, req.ContainerId)
	if err != nil {
		return nil, err
	}
	var stdout, stderr bytes.Buffer
	timeout := time.Duration(req.Timeout) * time.Second
	code, timedOut, err := s.b.ContainerExecSync(ctx, c.ID, req.Cmd, timeout, &limitedBuffer{&stdout}, &limitedBuffer{&stderr})
	if timedOut {
		return nil, status.Errorf(codes.DeadlineExceeded, "command %q timed out after %s", strings.Join(req.Cmd, " "), timeout)
	}
	if err != nil {
		return nil, fmt.Errorf("exec in container %s: %w", c.ID, err)
	}
	return &runtimeapi.ExecSyncResponse{Stdout: stdout.Bytes(), Stderr: stderr.Bytes(), ExitCode: int32(code)}, nil
}

// maxExecSyncOutput bounds what an ExecSync keeps of each stream, as the
// kubelet's own limit for probes' output.
const maxExecSyncOutput = 16 << 20

// limitedBuffer keeps the first maxExecSyncOutput bytes and drops the
// rest, so a chatty command cannot fill the daemon's memory.
type limitedBuffer struct{ b *bytes.Buffer }

func (l *limitedBuffer) Write(p []byte) (int, error) {
	if room := maxExecSyncOutput - l.b.Len(); room > 0 {
		if len(p) > room {
			l.b.Write(p[:room])
		} else {
			l.b.Write(p)
		}
	}
	return len(p), nil
}

func (s *Server) Exec(ctx context.Context, req *runtimeapi.ExecRequest) (*runtimeapi.ExecResponse, error) {
	if len(req.Cmd) == 0 {
		return nil, invalid("exec: no command")
	}
	if !req.Stdout && !req.Stderr && !req.Stdin {
		return nil, invalid("exec: one of stdin, stdout and stderr must be asked for")
	}
	id, err := s.streamTarget(ctx, req.ContainerId, "exec")
	if err != nil {
		return nil, err
	}
	req.ContainerId = id
	return s.streams.GetExec(req)
}

// readySandbox is the pod sandbox id, which must be ready for a container
// to be made in it or a port forwarded into it.
func (s *Server) readySandbox(id string) (*sandbox, error) {
	sb, err := s.pods.get(id)
	if err != nil {
		return nil, err
	}
	if !sb.Ready {
		return nil, status.Errorf(codes.FailedPrecondition, "pod sandbox %s is not ready", sb.ID)
	}
	return sb, nil
}

// streamTarget is the full ID of a running container that exec or attach
// (what) may stream to, once the streaming server is there to serve it.
func (s *Server) streamTarget(ctx context.Context, containerID, what string) (string, error) {
	c, err := s.inspect(ctx, containerID)
	if err != nil {
		return "", err
	}
	if c.State == nil || !c.State.Running {
		return "", status.Errorf(codes.FailedPrecondition, "container %s is not running", c.ID)
	}
	if s.streams == nil {
		return "", unimplemented("%s: no streaming server", what)
	}
	return c.ID, nil
}

func (s *Server) Attach(ctx context.Context, req *runtimeapi.AttachRequest) (*runtimeapi.AttachResponse, error) {
	id, err := s.streamTarget(ctx, req.ContainerId, "attach")
	if err != nil {
		return nil, err
	}
	req.ContainerId = id
	return s.streams.GetAttach(req)
}

func (s *Server) PortForward(ctx context.Context, req *runtimeapi.PortForwardRequest) (*runtimeapi.PortForwardResponse, error) {
	sb, err := s.readySandbox(req.PodSandboxId)
	if err != nil {
		return nil, err
	}
	if s.streams == nil {
		return nil, unimplemented("port-forward: no streaming server")
	}
	req.PodSandboxId = sb.ID
	return s.streams.GetPortForward(req)
}

// NetNS is a ready pod's pinned network namespace ("" for the host's), for
// the streaming server's port-forward.
func (s *Server) NetNS(podID string) (string, error) {
	sb, err := s.pods.get(podID)
	if err != nil {
		return "", errdefs.NotFound(err)
	}
	if !sb.Ready {
		return "", errdefs.Conflict(fmt.Errorf("pod sandbox %s is not ready", sb.ID))
	}
	return sb.NetNS, nil
}
