package cri

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/docker/docker/pkg/stringid"
	"golang.org/x/sys/unix"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/sdengine/engine/cri/cni"
	"github.com/sdengine/engine/cri/podinfra"
	"github.com/sdengine/engine/cri/podns"
)

// defaultHandler is the one runtime handler: libcontainer through the
// engine's shims. The kubelet's RuntimeClass may name it.
const defaultHandler = "runc"

// podShmSize is the size of a pod's /dev/shm, as the kubelet's other
// runtimes give it.
const podShmSize = 64 << 20

func (s *Server) RunPodSandbox(ctx context.Context, req *runtimeapi.RunPodSandboxRequest) (_ *runtimeapi.RunPodSandboxResponse, retErr error) {
	cfg := req.GetConfig()
	m := cfg.GetMetadata()
	if m == nil || m.Name == "" || m.Namespace == "" || m.Uid == "" {
		return nil, invalid("pod sandbox config: metadata needs a name, a namespace and a uid")
	}
	if h := req.RuntimeHandler; h != "" && h != defaultHandler {
		return nil, notFound("runtime handler %q: the only one is %q", h, defaultHandler)
	}
	if err := checkUserns(cfg.GetLinux().GetSecurityContext().GetNamespaceOptions().GetUsernsOptions()); err != nil {
		return nil, err
	}
	sb := &sandbox{
		ID:        stringid.GenerateRandomID(),
		CreatedAt: time.Now().UnixNano(),
		Handler:   req.RuntimeHandler,
		config:    cfg,
	}
	sb.Dir = filepath.Join(s.cfg.RunRoot, sb.ID)
	name := sandboxName(m)
	if err := s.pods.reserve(name, sb.ID); err != nil {
		return nil, alreadyExists(err)
	}
	defer func() {
		if retErr != nil {
			s.pods.release(name, sb.ID)
		}
	}()
	if err := os.MkdirAll(sb.Dir, 0o711); err != nil {
		return nil, fmt.Errorf("pod sandbox dir: %w", err)
	}
	defer func() {
		if retErr != nil {
			s.releaseSandbox(context.WithoutCancel(ctx), sb)
			os.RemoveAll(sb.Dir)
		}
	}()

	ns := cfg.GetLinux().GetSecurityContext().GetNamespaceOptions()
	hostNet := ns.GetNetwork() == runtimeapi.NamespaceMode_NODE
	hostIPC := ns.GetIpc() == runtimeapi.NamespaceMode_NODE
	switch ns.GetPid() {
	case runtimeapi.NamespaceMode_NODE:
		sb.HostPID = true
	case runtimeapi.NamespaceMode_POD:
		infra, err := podinfra.Start(s.cfg.InfraBinary)
		if err != nil {
			return nil, err
		}
		sb.Infra = infra
	}
	hostname := cfg.Hostname
	if hostNet {
		h, err := os.Hostname()
		if err != nil {
			return nil, err
		}
		hostname = h
	}
	pinned, err := podns.Pin(filepath.Join(sb.Dir, "ns"), podns.Options{
		Net: !hostNet, IPC: !hostIPC, UTS: !hostNet, Hostname: hostname,
	})
	if err != nil {
		return nil, fmt.Errorf("pin the pod's namespaces: %w", err)
	}
	sb.NetNS, sb.IPCNS, sb.UTSNS = pinned.Net, pinned.IPC, pinned.UTS

	if hostIPC {
		sb.ShmDir = "/dev/shm"
	} else {
		sb.ShmDir = filepath.Join(sb.Dir, "shm")
		if err := mountShm(sb.ShmDir); err != nil {
			return nil, err
		}
		sb.ShmOwned = true
	}
	if err := writePodFiles(sb.Dir, hostname, hostNet, cfg.GetDnsConfig()); err != nil {
		return nil, err
	}
	if !hostNet {
		res, err := s.net.Setup(ctx, podNetwork(sb))
		if err != nil {
			return nil, fmt.Errorf("set up the pod's network: %w", err)
		}
		for _, ip := range res.IPs {
			sb.IPs = append(sb.IPs, ip.String())
		}
	}
	sb.Ready = true
	if err := s.pods.save(sb); err != nil {
		return nil, err
	}
	slog.Info("cri: pod sandbox ready", "id", sb.ID, "pod", m.Namespace+"/"+m.Name, "ips", sb.IPs)
	return &runtimeapi.RunPodSandboxResponse{PodSandboxId: sb.ID}, nil
}

// podNetwork is what CNI is told of the pod.
func podNetwork(sb *sandbox) cni.Pod {
	m := sb.config.GetMetadata()
	p := cni.Pod{ID: sb.ID, Name: m.GetName(), Namespace: m.GetNamespace(), UID: m.GetUid(), NetNS: sb.NetNS}
	for _, pm := range sb.config.GetPortMappings() {
		if pm.HostPort <= 0 {
			continue // only published ports concern the plugins
		}
		p.PortMappings = append(p.PortMappings, cni.PortMapping{
			HostPort: pm.HostPort, ContainerPort: pm.ContainerPort,
			Protocol: strings.ToLower(pm.Protocol.String()), HostIP: pm.HostIp,
		})
	}
	return p
}

// mountShm mounts the pod's /dev/shm, a tmpfs its containers bind.
func mountShm(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	opts := fmt.Sprintf("mode=1777,size=%d", podShmSize)
	if err := unix.Mount("shm", dir, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, opts); err != nil {
		return fmt.Errorf("mount the pod's /dev/shm: %w", err)
	}
	return nil
}

// writePodFiles writes the pod's /etc/hostname, /etc/hosts and
// /etc/resolv.conf, which its containers bind. Without a DNS config the
// host's resolv.conf is the pod's, as the kubelet expects of a runtime.
func writePodFiles(dir, hostname string, hostNet bool, dns *runtimeapi.DNSConfig) error {
	hosts := "127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\nfe00::0\tip6-localnet\nff00::0\tip6-mcastprefix\nff02::1\tip6-allnodes\nff02::2\tip6-allrouters\n"
	if hostNet {
		if b, err := os.ReadFile("/etc/hosts"); err == nil {
			hosts = string(b)
		}
	}
	var resolv string
	if dns == nil {
		b, err := os.ReadFile("/etc/resolv.conf")
		if err != nil && !os.IsNotExist(err) {
			return err
		}
		resolv = string(b)
	} else {
		var sb strings.Builder
		if len(dns.Searches) > 0 {
			fmt.Fprintf(&sb, "search %s\n", strings.Join(dns.Searches, " "))
		}
		for _, srv := range dns.Servers {
			fmt.Fprintf(&sb, "nameserver %s\n", srv)
		}
		if len(dns.Options) > 0 {
			fmt.Fprintf(&sb, "options %s\n", strings.Join(dns.Options, " "))
		}
		resolv = sb.String()
	}
	for name, content := range map[string]string{"hostname": hostname + "\n", "hosts": hosts, "resolv.conf": resolv} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			return fmt.Errorf("write the pod's %s: %w", name, err)
		}
	}
	return nil
}

// podFiles are the pod's /etc files by name, for runconfig.Pod.
func podFiles(sb *sandbox) map[string]string {
	out := map[string]string{}
	for _, f := range []string{"hostname", "hosts", "resolv.conf"} {
		out[f] = filepath.Join(sb.Dir, f)
	}
	return out
}

// releaseSandbox undoes what RunPodSandbox set up, whatever of it is
// there: the network first (the plugins need the namespace), then /dev/shm
// and the pinned namespaces. It goes on after an error, and says all.
func (s *Server) releaseSandbox(ctx context.Context, sb *sandbox) error {
	var errs []error
	if sb.NetNS != "" {
		if err := s.net.Teardown(ctx, podNetwork(sb)); err != nil {
			errs = append(errs, fmt.Errorf("tear down the pod's network: %w", err))
		}
	}
	if sb.ShmOwned {
		if err := unix.Unmount(sb.ShmDir, unix.MNT_DETACH); err != nil && !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ENOENT) {
			errs = append(errs, fmt.Errorf("unmount the pod's /dev/shm: %w", err))
		}
	}
	if err := podns.Release(filepath.Join(sb.Dir, "ns")); err != nil {
		errs = append(errs, err)
	}
	if sb.Infra != nil {
		if err := sb.Infra.Stop(); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// StopPodSandbox stops the pod's containers and releases its network and
// namespaces; the record stays (NOTREADY) until the removal. It is
// idempotent: stopping a pod that is not there (any more) succeeds.
func (s *Server) StopPodSandbox(ctx context.Context, req *runtimeapi.StopPodSandboxRequest) (*runtimeapi.StopPodSandboxResponse, error) {
	sb, err := s.pods.get(req.PodSandboxId)
	if isNotFound(err) {
		return &runtimeapi.StopPodSandboxResponse{}, nil
	}
	if err != nil {
		return nil, err
	}
	if err := s.stopPod(ctx, sb); err != nil {
		return nil, err
	}
	return &runtimeapi.StopPodSandboxResponse{}, nil
}

func (s *Server) stopPod(ctx context.Context, sb *sandbox) error {
	ctrs, err := s.podContainers(ctx, sb.ID)
	if err != nil {
		return err
	}
	for _, c := range ctrs {
		if c.State != "running" && c.State != "paused" && c.State != "restarting" {
			continue
		}
		if err := s.stopContainer(ctx, c.ID, 0); err != nil {
			return fmt.Errorf("stop container %s of the pod: %w", c.ID, err)
		}
	}
	if err := s.releaseSandbox(ctx, sb); err != nil {
		return err
	}
	if sb.Ready {
		sb.Ready = false
		if err := s.pods.save(sb); err != nil {
			return err
		}
	}
	return nil
}

// RemovePodSandbox stops the pod if it runs, removes its containers, its
// directory and its record. Removing an unknown pod succeeds.
func (s *Server) RemovePodSandbox(ctx context.Context, req *runtimeapi.RemovePodSandboxRequest) (*runtimeapi.RemovePodSandboxResponse, error) {
	sb, err := s.pods.get(req.PodSandboxId)
	if err != nil {
		if isNotFound(err) {
			return &runtimeapi.RemovePodSandboxResponse{}, nil
		}
		return nil, err
	}
	if err := s.stopPod(ctx, sb); err != nil {
		return nil, err
	}
	ctrs, err := s.podContainers(ctx, sb.ID)
	if err != nil {
		return nil, err
	}
	for _, c := range ctrs {
		if err := s.removeContainer(ctx, c.ID); err != nil {
			return nil, fmt.Errorf("remove container %s of the pod: %w", c.ID, err)
		}
	}
	if err := os.RemoveAll(sb.Dir); err != nil {
		return nil, fmt.Errorf("remove the pod's directory: %w", err)
	}
	if err := s.pods.remove(sb); err != nil {
		return nil, err
	}
	return &runtimeapi.RemovePodSandboxResponse{}, nil
}

func (s *Server) PodSandboxStatus(ctx context.Context, req *runtimeapi.PodSandboxStatusRequest) (*runtimeapi.PodSandboxStatusResponse, error) {
	sb, err := s.pods.get(req.PodSandboxId)
	if err != nil {
		return nil, err
	}
	st := sandboxStatus(sb)
	resp := &runtimeapi.PodSandboxStatusResponse{Status: st}
	if req.Verbose {
		resp.Info = map[string]string{"netns": sb.NetNS, "ipcns": sb.IPCNS, "utsns": sb.UTSNS, "dir": sb.Dir}
		if sb.Infra != nil {
			resp.Info["pid"] = strconv.Itoa(sb.Infra.PID)
		}
	}
	return resp, nil
}

func sandboxStatus(sb *sandbox) *runtimeapi.PodSandboxStatus {
	cfg := sb.config
	state := runtimeapi.PodSandboxState_SANDBOX_NOTREADY
	if sb.Ready {
		state = runtimeapi.PodSandboxState_SANDBOX_READY
	}
	st := &runtimeapi.PodSandboxStatus{
		Id:             sb.ID,
		Metadata:       cfg.Metadata,
		State:          state,
		CreatedAt:      sb.CreatedAt,
		Labels:         cfg.Labels,
		Annotations:    cfg.Annotations,
		RuntimeHandler: sb.Handler,
		Linux: &runtimeapi.LinuxPodSandboxStatus{Namespaces: &runtimeapi.Namespace{
			Options: cfg.GetLinux().GetSecurityContext().GetNamespaceOptions(),
		}},
	}
	if sb.Ready && len(sb.IPs) > 0 {
		st.Network = &runtimeapi.PodSandboxNetworkStatus{Ip: sb.IPs[0]}
		for _, ip := range sb.IPs[1:] {
			st.Network.AdditionalIps = append(st.Network.AdditionalIps, &runtimeapi.PodIP{Ip: ip})
		}
	}
	return st
}

func (s *Server) ListPodSandbox(ctx context.Context, req *runtimeapi.ListPodSandboxRequest) (*runtimeapi.ListPodSandboxResponse, error) {
	f := req.GetFilter()
	var out []*runtimeapi.PodSandbox
	for _, sb := range s.pods.list() {
		st := sandboxStatus(sb)
		if f != nil {
			if f.Id != "" && !strings.HasPrefix(sb.ID, f.Id) {
				continue
			}
			if f.State != nil && f.State.State != st.State {
				continue
			}
			if !matchLabels(st.Labels, f.LabelSelector) {
				continue
			}
		}
		out = append(out, &runtimeapi.PodSandbox{
			Id: sb.ID, Metadata: st.Metadata, State: st.State, CreatedAt: st.CreatedAt,
			Labels: st.Labels, Annotations: st.Annotations, RuntimeHandler: st.RuntimeHandler,
		})
	}
	return &runtimeapi.ListPodSandboxResponse{Items: out}, nil
}

// matchLabels says whether labels hold every key=value of sel.
func matchLabels(labels, sel map[string]string) bool {
	for k, v := range sel {
		if got, ok := labels[k]; !ok || got != v {
			return false
		}
	}
	return true
}

// checkUserns refuses, before anything of the pod is made, the user
// namespace options the engine cannot honour. A pod runs in the node's user
// namespace (NODE, or no options); a user namespace of its own (POD) is not
// built yet, and CONTAINER or TARGET are not modes a pod's user namespace
// can have. Running such a pod in the node's namespace instead would give
// its root the node's root.
func checkUserns(u *runtimeapi.UserNamespace) error {
	if u == nil {
		return nil // no options: the node's (POD is the enum's zero value)
	}
	switch u.Mode {
	case runtimeapi.NamespaceMode_NODE:
		if len(u.GetUids()) > 0 || len(u.GetGids()) > 0 {
			return invalid("user namespace mode NODE takes no ID mappings")
		}
		return nil
	case runtimeapi.NamespaceMode_POD:
		return unimplemented("user namespaces for pods (hostUsers: false) are not supported yet")
	default:
		return invalid("user namespace mode %s: a pod's user namespace is NODE or POD", u.Mode)
	}
}
