package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// criClient speaks CRI v1 to one engine's socket, as a kubelet would.
type criClient struct {
	conn *grpc.ClientConn
	rt   runtimeapi.RuntimeServiceClient
	img  runtimeapi.ImageServiceClient
}

func dialCRI(sock string) (*criClient, error) {
	conn, err := grpc.NewClient("unix://"+sock, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return nil, fmt.Errorf("dial CRI %s: %w", sock, err)
	}
	return &criClient{conn: conn, rt: runtimeapi.NewRuntimeServiceClient(conn), img: runtimeapi.NewImageServiceClient(conn)}, nil
}

func (c *criClient) Close() error { return c.conn.Close() }

// ready says whether the runtime reports both RuntimeReady and
// NetworkReady (containerd loads the CNI configuration asynchronously).
func (c *criClient) ready(ctx context.Context) error {
	st, err := c.rt.Status(ctx, &runtimeapi.StatusRequest{})
	if err != nil {
		return err
	}
	for _, cond := range st.GetStatus().GetConditions() {
		if !cond.Status {
			return fmt.Errorf("%s: %s %s", cond.Type, cond.Reason, cond.Message)
		}
	}
	return nil
}

func (c *criClient) version(ctx context.Context) string {
	v, err := c.rt.Version(ctx, &runtimeapi.VersionRequest{})
	if err != nil {
		return "unknown: " + err.Error()
	}
	return v.RuntimeName + " " + v.RuntimeVersion + " (CRI " + v.RuntimeApiVersion + ")"
}

// imageID resolves an image name to its ID: the kubelet creates
// containers with the image's ID (and the name as the user gave it).
func (c *criClient) imageID(ctx context.Context, ref string) (string, error) {
	st, err := c.img.ImageStatus(ctx, &runtimeapi.ImageStatusRequest{Image: &runtimeapi.ImageSpec{Image: ref}})
	if err != nil {
		return "", fmt.Errorf("image status %s: %w", ref, err)
	}
	if st.Image == nil {
		return "", fmt.Errorf("image %s not found", ref)
	}
	return st.Image.Id, nil
}

// podSpec is one pod of the benchmark: fresh name and UID each time.
type podSpec struct {
	name, uid       string
	logDir, podDir  string // the kubelet's per-pod log and volume dirs
	cgroupParent    string
	image, imageRef string // image ID and the name the user gave
}

// kubelet's defaults for a container's /proc masking (the runtime's
// default ProcMountType), sent with every container.
var (
	defaultMaskedPaths   = []string{"/proc/asound", "/proc/acpi", "/proc/kcore", "/proc/keys", "/proc/latency_stats", "/proc/timer_list", "/proc/timer_stats", "/proc/sched_debug", "/proc/scsi", "/sys/firmware", "/sys/devices/virtual/powercap"}
	defaultReadonlyPaths = []string{"/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger"}
)

// namespaceOptions are the kubelet's for a pod without hostNetwork,
// hostIPC, hostPID or shareProcessNamespace: PID per container.
func namespaceOptions() *runtimeapi.NamespaceOption {
	return &runtimeapi.NamespaceOption{
		Network: runtimeapi.NamespaceMode_POD,
		Pid:     runtimeapi.NamespaceMode_CONTAINER,
		Ipc:     runtimeapi.NamespaceMode_POD,
	}
}

func (p *podSpec) sandboxConfig() *runtimeapi.PodSandboxConfig {
	labels := map[string]string{
		"io.kubernetes.pod.name":      p.name,
		"io.kubernetes.pod.namespace": "sdbench",
		"io.kubernetes.pod.uid":       p.uid,
	}
	return &runtimeapi.PodSandboxConfig{
		Metadata:     &runtimeapi.PodSandboxMetadata{Name: p.name, Namespace: "sdbench", Uid: p.uid},
		Hostname:     p.name,
		LogDirectory: p.logDir,
		DnsConfig: &runtimeapi.DNSConfig{
			Servers:  []string{"10.96.0.10"},
			Searches: []string{"sdbench.svc.cluster.local", "svc.cluster.local", "cluster.local"},
			Options:  []string{"ndots:5"},
		},
		Labels:      labels,
		Annotations: map[string]string{"kubernetes.io/config.source": "api", "kubernetes.io/config.seen": time.Now().UTC().Format(time.RFC3339Nano)},
		Linux: &runtimeapi.LinuxPodSandboxConfig{
			CgroupParent: p.cgroupParent,
			SecurityContext: &runtimeapi.LinuxSandboxSecurityContext{
				NamespaceOptions: namespaceOptions(),
				Seccomp:          &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_Unconfined},
			},
			Resources: &runtimeapi.LinuxContainerResources{CpuPeriod: 100000, CpuShares: 2},
		},
	}
}

// containerConfig is a besteffort container as the kubelet sends it:
// image by ID, the two files it binds (/etc/hosts it manages and the
// termination log), the default masked and read-only /proc paths.
func (p *podSpec) containerConfig() *runtimeapi.ContainerConfig {
	return &runtimeapi.ContainerConfig{
		Metadata: &runtimeapi.ContainerMetadata{Name: "sleep"},
		Image:    &runtimeapi.ImageSpec{Image: p.image, UserSpecifiedImage: p.imageRef},
		Command:  []string{"sleep", "3600"},
		Envs:     []*runtimeapi.KeyValue{{Key: "KUBERNETES_SERVICE_HOST", Value: []byte("10.96.0.1")}, {Key: "KUBERNETES_SERVICE_PORT", Value: []byte("443")}},
		Mounts: []*runtimeapi.Mount{
			{ContainerPath: "/etc/hosts", HostPath: filepath.Join(p.podDir, "etc-hosts")},
			{ContainerPath: "/dev/termination-log", HostPath: filepath.Join(p.podDir, "containers", "sleep", "termination-log")},
		},
		Labels: map[string]string{
			"io.kubernetes.container.name": "sleep",
			"io.kubernetes.pod.name":       p.name,
			"io.kubernetes.pod.namespace":  "sdbench",
			"io.kubernetes.pod.uid":        p.uid,
		},
		Annotations: map[string]string{"io.kubernetes.container.restartCount": "0", "io.kubernetes.container.terminationMessagePath": "/dev/termination-log"},
		LogPath:     "sleep/0.log",
		Linux: &runtimeapi.LinuxContainerConfig{
			Resources: &runtimeapi.LinuxContainerResources{CpuPeriod: 100000, CpuShares: 2, OomScoreAdj: 1000},
			SecurityContext: &runtimeapi.LinuxContainerSecurityContext{
				NamespaceOptions: namespaceOptions(),
				Seccomp:          &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_Unconfined},
				MaskedPaths:      defaultMaskedPaths,
				ReadonlyPaths:    defaultReadonlyPaths,
			},
		},
	}
}

// prepare makes what the kubelet makes before it asks the runtime for a
// pod: the log directory and the files it binds into containers.
func (p *podSpec) prepare() error {
	for _, d := range []string{filepath.Join(p.logDir, "sleep"), filepath.Join(p.podDir, "containers", "sleep")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	hosts := "127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n"
	if err := os.WriteFile(filepath.Join(p.podDir, "etc-hosts"), []byte(hosts), 0o644); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(p.podDir, "containers", "sleep", "termination-log"), nil, 0o666)
}

// callTimes are one pod's CRI calls, in milliseconds.
type callTimes struct {
	run, create, start, stop, remove float64
}

// startPod runs the pod, creates and starts its container, timing each.
func (c *criClient) startPod(ctx context.Context, p *podSpec, t *callTimes) (string, error) {
	cfg := p.sandboxConfig()
	t0 := time.Now()
	r, err := c.rt.RunPodSandbox(ctx, &runtimeapi.RunPodSandboxRequest{Config: cfg})
	t.run = ms(time.Since(t0))
	if err != nil {
		return "", fmt.Errorf("RunPodSandbox: %w", err)
	}
	t1 := time.Now()
	cr, err := c.rt.CreateContainer(ctx, &runtimeapi.CreateContainerRequest{PodSandboxId: r.PodSandboxId, Config: p.containerConfig(), SandboxConfig: cfg})
	t.create = ms(time.Since(t1))
	if err != nil {
		return r.PodSandboxId, fmt.Errorf("CreateContainer: %w", err)
	}
	t2 := time.Now()
	_, err = c.rt.StartContainer(ctx, &runtimeapi.StartContainerRequest{ContainerId: cr.ContainerId})
	t.start = ms(time.Since(t2))
	if err != nil {
		return r.PodSandboxId, fmt.Errorf("StartContainer: %w", err)
	}
	return r.PodSandboxId, nil
}

// teardownPod stops and removes the pod, timing each call.
func (c *criClient) teardownPod(ctx context.Context, id string, t *callTimes) error {
	t0 := time.Now()
	_, err := c.rt.StopPodSandbox(ctx, &runtimeapi.StopPodSandboxRequest{PodSandboxId: id})
	t.stop = ms(time.Since(t0))
	if err != nil {
		return fmt.Errorf("StopPodSandbox: %w", err)
	}
	t1 := time.Now()
	_, err = c.rt.RemovePodSandbox(ctx, &runtimeapi.RemovePodSandboxRequest{PodSandboxId: id})
	t.remove = ms(time.Since(t1))
	if err != nil {
		return fmt.Errorf("RemovePodSandbox: %w", err)
	}
	return nil
}

// removeAllPods stops and removes every pod the engine has (clean-up).
func (c *criClient) removeAllPods(ctx context.Context) error {
	l, err := c.rt.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{})
	if err != nil {
		return err
	}
	var t callTimes
	for _, p := range l.Items {
		if err := c.teardownPod(ctx, p.Id, &t); err != nil {
			return err
		}
	}
	return nil
}

// containerRunning checks that the pod's container did start and stays up.
func (c *criClient) containerRunning(ctx context.Context, podID string) error {
	l, err := c.rt.ListContainers(ctx, &runtimeapi.ListContainersRequest{Filter: &runtimeapi.ContainerFilter{PodSandboxId: podID}})
	if err != nil {
		return err
	}
	if len(l.Containers) != 1 || l.Containers[0].State != runtimeapi.ContainerState_CONTAINER_RUNNING {
		return fmt.Errorf("pod %s: want one running container, got %v", podID, l.Containers)
	}
	return nil
}
