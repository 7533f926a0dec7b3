package cri

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	containertypes "github.com/docker/docker/api/types/container"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

func (s *Server) ContainerStats(ctx context.Context, req *runtimeapi.ContainerStatsRequest) (*runtimeapi.ContainerStatsResponse, error) {
	c, err := s.inspect(ctx, req.ContainerId)
	if err != nil {
		return nil, err
	}
	st, err := s.containerStats(ctx, c.ID, containerStatus(c))
	if err != nil {
		return nil, err
	}
	return &runtimeapi.ContainerStatsResponse{Stats: st}, nil
}

func (s *Server) ListContainerStats(ctx context.Context, req *runtimeapi.ListContainerStatsRequest) (*runtimeapi.ListContainerStatsResponse, error) {
	f := req.GetFilter()
	list, err := s.ListContainers(ctx, &runtimeapi.ListContainersRequest{Filter: &runtimeapi.ContainerFilter{
		Id: f.GetId(), PodSandboxId: f.GetPodSandboxId(), LabelSelector: f.GetLabelSelector(),
	}})
	if err != nil {
		return nil, err
	}
	var out []*runtimeapi.ContainerStats
	for _, c := range list.Containers {
		st, err := s.containerStats(ctx, c.Id, &runtimeapi.ContainerStatus{Id: c.Id, Metadata: c.Metadata, Labels: c.Labels, Annotations: c.Annotations, State: c.State})
		if err != nil {
			continue // removed meanwhile
		}
		out = append(out, st)
	}
	return &runtimeapi.ListContainerStatsResponse{Stats: out}, nil
}

// containerStats reads the engine's one-shot stats (cgroup counters) as
// CRI's: a stopped container has its attributes and no usage.
func (s *Server) containerStats(ctx context.Context, id string, st *runtimeapi.ContainerStatus) (*runtimeapi.ContainerStats, error) {
	out := &runtimeapi.ContainerStats{Attributes: &runtimeapi.ContainerAttributes{
		Id: id, Metadata: st.Metadata, Labels: st.Labels, Annotations: st.Annotations,
	}}
	now := time.Now().UnixNano()
	out.WritableLayer = &runtimeapi.FilesystemUsage{Timestamp: now, FsId: &runtimeapi.FilesystemIdentifier{Mountpoint: "/"}, UsedBytes: &runtimeapi.UInt64Value{}, InodesUsed: &runtimeapi.UInt64Value{}}
	if st.State != runtimeapi.ContainerState_CONTAINER_RUNNING {
		return out, nil
	}
	var buf bytes.Buffer
	if err := s.b.ContainerStats(ctx, id, false, true, &buf); err != nil {
		return nil, err
	}
	var ds containertypes.StatsResponse
	if err := json.NewDecoder(strings.NewReader(buf.String())).Decode(&ds); err != nil {
		return nil, fmt.Errorf("stats of %s: %w", id, err)
	}
	ts := now
	if !ds.Read.IsZero() {
		ts = ds.Read.UnixNano()
	}
	out.Cpu = &runtimeapi.CpuUsage{Timestamp: ts, UsageCoreNanoSeconds: &runtimeapi.UInt64Value{Value: ds.CPUStats.CPUUsage.TotalUsage}}
	usage := ds.MemoryStats.Usage
	// The working set as the kubelet reckons it: usage less the inactive
	// file cache.
	ws := usage
	inactive := ds.MemoryStats.Stats["total_inactive_file"]
	if v, ok := ds.MemoryStats.Stats["inactive_file"]; ok {
		inactive = v
	}
	if inactive < ws {
		ws -= inactive
	} else {
		ws = 0
	}
	out.Memory = &runtimeapi.MemoryUsage{
		Timestamp:       ts,
		WorkingSetBytes: &runtimeapi.UInt64Value{Value: ws},
		UsageBytes:      &runtimeapi.UInt64Value{Value: usage},
		RssBytes:        &runtimeapi.UInt64Value{Value: ds.MemoryStats.Stats["rss"]},
	}
	return out, nil
}

func (s *Server) PodSandboxStats(ctx context.Context, req *runtimeapi.PodSandboxStatsRequest) (*runtimeapi.PodSandboxStatsResponse, error) {
	sb, err := s.pods.get(req.PodSandboxId)
	if err != nil {
		return nil, err
	}
	st, err := s.podStats(ctx, sb)
	if err != nil {
		return nil, err
	}
	return &runtimeapi.PodSandboxStatsResponse{Stats: st}, nil
}

func (s *Server) ListPodSandboxStats(ctx context.Context, req *runtimeapi.ListPodSandboxStatsRequest) (*runtimeapi.ListPodSandboxStatsResponse, error) {
	f := req.GetFilter()
	var out []*runtimeapi.PodSandboxStats
	for _, sb := range s.pods.list() {
		if f.GetId() != "" && !strings.HasPrefix(sb.ID, f.GetId()) {
			continue
		}
		if !matchLabels(sb.config.Labels, f.GetLabelSelector()) {
			continue
		}
		st, err := s.podStats(ctx, sb)
		if err != nil {
			return nil, err
		}
		out = append(out, st)
	}
	return &runtimeapi.ListPodSandboxStatsResponse{Stats: out}, nil
}

// podStats sums the pod's containers' CPU and memory.
func (s *Server) podStats(ctx context.Context, sb *sandbox) (*runtimeapi.PodSandboxStats, error) {
	list, err := s.ListContainerStats(ctx, &runtimeapi.ListContainerStatsRequest{Filter: &runtimeapi.ContainerStatsFilter{PodSandboxId: sb.ID}})
	if err != nil {
		return nil, err
	}
	now := time.Now().UnixNano()
	lin := &runtimeapi.LinuxPodSandboxStats{
		Cpu:        &runtimeapi.CpuUsage{Timestamp: now, UsageCoreNanoSeconds: &runtimeapi.UInt64Value{}},
		Memory:     &runtimeapi.MemoryUsage{Timestamp: now, WorkingSetBytes: &runtimeapi.UInt64Value{}, UsageBytes: &runtimeapi.UInt64Value{}},
		Containers: list.Stats,
	}
	for _, c := range list.Stats {
		if c.Cpu != nil {
			lin.Cpu.UsageCoreNanoSeconds.Value += c.Cpu.UsageCoreNanoSeconds.GetValue()
		}
		if c.Memory != nil {
			lin.Memory.WorkingSetBytes.Value += c.Memory.WorkingSetBytes.GetValue()
			lin.Memory.UsageBytes.Value += c.Memory.UsageBytes.GetValue()
		}
	}
	return &runtimeapi.PodSandboxStats{
		Attributes: &runtimeapi.PodSandboxAttributes{
			Id: sb.ID, Metadata: sb.config.Metadata, Labels: sb.config.Labels, Annotations: sb.config.Annotations,
		},
		Linux: lin,
	}, nil
}
