package cri

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	containertypes "github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/mount"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/sdengine/engine/api/server/backend"
	"github.com/sdengine/engine/runconfig"
)

// The labels with which the CRI marks its containers. The container's own
// CRI labels are copied as Docker labels too (docker ps shows them), but
// read back from labelLabels: the image's labels merge into the Docker
// ones.
const (
	labelPrefix      = "io.sdengine.cri."
	labelSandbox     = labelPrefix + "sandbox"
	labelName        = labelPrefix + "name"
	labelAttempt     = labelPrefix + "attempt"
	labelLabels      = labelPrefix + "labels"
	labelAnnotations = labelPrefix + "annotations"
	labelImage       = labelPrefix + "image"
	labelLogPath     = labelPrefix + "log-path"
)

// containerName is the engine's name for a pod's container, the kubelet's
// own convention for Docker: k8s_<container>_<pod>_<namespace>_<uid>_<attempt>.
func containerName(m *runtimeapi.ContainerMetadata, pod *runtimeapi.PodSandboxMetadata) string {
	return fmt.Sprintf("k8s_%s_%s_%s_%s_%d", m.Name, pod.Name, pod.Namespace, pod.Uid, m.Attempt)
}

// createParams translates a CRI container config into the engine's create
// request: Docker's Config and HostConfig, and the pod to join.
func createParams(sb *sandbox, cfg *runtimeapi.ContainerConfig, imageID string) (backend.CreateParams, error) {
	pod := sb.config
	sec := cfg.GetLinux().GetSecurityContext()
	if sec.GetRunAsGroup() != nil && sec.GetRunAsUser() == nil && sec.GetRunAsUsername() == "" {
		// The group would apply to whatever user the image names: the
		// kubelet never sends that, so it is a malformed request.
		return backend.CreateParams{}, invalid("security context: run_as_group needs run_as_user or run_as_username")
	}
	labels := map[string]string{}
	for k, v := range cfg.Labels {
		labels[k] = v
	}
	enc := func(m map[string]string) string {
		b, _ := json.Marshal(m)
		return string(b)
	}
	logPath := ""
	if pod.LogDirectory != "" && cfg.LogPath != "" {
		logPath = filepath.Join(pod.LogDirectory, cfg.LogPath)
	}
	labels[labelSandbox] = sb.ID
	labels[labelName] = cfg.Metadata.Name
	labels[labelAttempt] = strconv.FormatUint(uint64(cfg.Metadata.Attempt), 10)
	labels[labelLabels] = enc(cfg.Labels)
	labels[labelAnnotations] = enc(cfg.Annotations)
	labels[labelImage] = cfg.Image.Image
	labels[labelLogPath] = logPath

	c := &containertypes.Config{
		Image:      imageID,
		Entrypoint: cfg.Command,
		Cmd:        cfg.Args,
		WorkingDir: cfg.WorkingDir,
		Tty:        cfg.Tty,
		OpenStdin:  cfg.Stdin,
		StdinOnce:  cfg.StdinOnce,
		Labels:     labels,
		User:       userOf(sec),
	}
	for _, kv := range cfg.Envs {
		c.Env = append(c.Env, kv.Key+"="+string(kv.Value))
	}

	ns := pod.GetLinux().GetSecurityContext().GetNamespaceOptions()
	hc := &containertypes.HostConfig{
		NetworkMode:    "none",
		IpcMode:        containertypes.IPCModePrivate,
		Privileged:     sec.GetPrivileged(),
		ReadonlyRootfs: sec.GetReadonlyRootfs(),
		Sysctls:        pod.GetLinux().GetSysctls(),
		LogConfig:      containertypes.LogConfig{Type: "none"},
		RestartPolicy:  containertypes.RestartPolicy{Name: containertypes.RestartPolicyDisabled},
	}
	if logPath != "" {
		hc.LogConfig = containertypes.LogConfig{Type: "cri", Config: map[string]string{"path": logPath}}
	}
	if ns.GetNetwork() == runtimeapi.NamespaceMode_NODE {
		hc.NetworkMode, hc.UTSMode = "host", "host"
	}
	if ns.GetIpc() == runtimeapi.NamespaceMode_NODE {
		hc.IpcMode = containertypes.IPCModeHost
	}
	var pidNS string // the pod's shared PID namespace, when the container joins it
	switch cns := sec.GetNamespaceOptions(); {
	case sb.HostPID || cns.GetPid() == runtimeapi.NamespaceMode_NODE:
		hc.PidMode = "host"
	case cns.GetPid() == runtimeapi.NamespaceMode_TARGET:
		if cns.TargetId == "" {
			return backend.CreateParams{}, invalid("PID namespace mode TARGET names no container")
		}
		hc.PidMode = containertypes.PidMode("container:" + cns.TargetId)
	case cns.GetPid() == runtimeapi.NamespaceMode_POD && sb.Infra != nil:
		pidNS = sb.Infra.NSPath()
	}
	if caps := sec.GetCapabilities(); caps != nil {
		hc.CapAdd = caps.AddCapabilities
		hc.CapDrop = caps.DropCapabilities
	}
	for _, g := range sec.GetSupplementalGroups() {
		hc.GroupAdd = append(hc.GroupAdd, strconv.FormatInt(g, 10))
	}
	if len(sec.GetMaskedPaths()) > 0 {
		hc.MaskedPaths = sec.MaskedPaths
	}
	if len(sec.GetReadonlyPaths()) > 0 {
		hc.ReadonlyPaths = sec.ReadonlyPaths
	}
	if sec.GetNoNewPrivs() {
		hc.SecurityOpt = append(hc.SecurityOpt, "no-new-privileges=true")
	}
	// A privileged container runs without seccomp whatever profile it
	// names, as with every CRI runtime: privileged is all or nothing.
	seccomp := "seccomp=unconfined"
	if !sec.GetPrivileged() {
		var err error
		if seccomp, err = seccompOpt(sec); err != nil {
			return backend.CreateParams{}, err
		}
	}
	if seccomp != "" {
		hc.SecurityOpt = append(hc.SecurityOpt, seccomp)
	}
	if r := cfg.GetLinux().GetResources(); r != nil {
		hc.Resources = resources(r)
		hc.OomScoreAdj = oomScoreAdj(r.OomScoreAdj)
	}
	hc.CgroupParent = pod.GetLinux().GetCgroupParent()
	for _, m := range cfg.Mounts {
		bm, err := bindMount(m)
		if err != nil {
			return backend.CreateParams{}, err
		}
		hc.Mounts = append(hc.Mounts, bm)
	}
	for _, d := range cfg.Devices {
		perms := d.Permissions
		if perms == "" {
			perms = "rwm"
		}
		hc.Devices = append(hc.Devices, containertypes.DeviceMapping{PathOnHost: d.HostPath, PathInContainer: d.ContainerPath, CgroupPermissions: perms})
	}
	p := &runconfig.Pod{
		SandboxID: sb.ID,
		NetNS:     sb.NetNS,
		IPCNS:     sb.IPCNS,
		UTSNS:     sb.UTSNS,
		PIDNS:     pidNS,
		ShmDir:    sb.ShmDir,
		Files:     podFiles(sb),
		// Merge, the default, is Docker's way: the image's groups of the
		// user come with the ones asked for.
		StrictGroups: sec.GetSupplementalGroupsPolicy() == runtimeapi.SupplementalGroupsPolicy_Strict,
	}
	if sb.UTSNS != "" {
		p.Hostname = pod.Hostname
	}
	return backend.CreateParams{
		Name:       containerName(cfg.Metadata, pod.Metadata),
		Config:     c,
		HostConfig: hc,
		Pod:        p,
	}, nil
}

// userOf is the Docker user string of a security context: uid or name,
// then :gid.
func userOf(sec *runtimeapi.LinuxContainerSecurityContext) string {
	u := sec.GetRunAsUsername()
	if v := sec.GetRunAsUser(); v != nil {
		u = strconv.FormatInt(v.Value, 10)
	}
	if g := sec.GetRunAsGroup(); g != nil {
		if u == "" {
			u = "0"
		}
		u += ":" + strconv.FormatInt(g.Value, 10)
	}
	return u
}

// seccompOpt is the security option for the container's seccomp profile.
// CRI's default, no profile at all, is unconfined: the kubelet asks for
// RuntimeDefault when it wants the engine's profile.
func seccompOpt(sec *runtimeapi.LinuxContainerSecurityContext) (string, error) {
	p := sec.GetSeccomp()
	if p == nil {
		// The field before the typed profile: "runtime/default",
		// "localhost/<path>", "unconfined" or empty.
		//lint:ignore SA1019 older kubelets and critest's SeccompProfilePath specs still send it
		switch path := sec.GetSeccompProfilePath(); {
		case path == "runtime/default" || path == "docker/default":
			return "", nil
		case strings.HasPrefix(path, "localhost/"):
			p = &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_Localhost, LocalhostRef: strings.TrimPrefix(path, "localhost/")}
		default:
			return "seccomp=unconfined", nil
		}
	}
	switch p.ProfileType {
	case runtimeapi.SecurityProfile_RuntimeDefault:
		return "", nil
	case runtimeapi.SecurityProfile_Unconfined:
		return "seccomp=unconfined", nil
	case runtimeapi.SecurityProfile_Localhost:
		if !filepath.IsAbs(p.LocalhostRef) {
			return "", invalid("seccomp profile %q: a localhost profile is an absolute path", p.LocalhostRef)
		}
		b, err := os.ReadFile(p.LocalhostRef)
		if err != nil {
			return "", invalid("seccomp profile: %v", err)
		}
		return "seccomp=" + string(b), nil
	}
	return "", invalid("unknown seccomp profile type %v", p.ProfileType)
}

func resources(r *runtimeapi.LinuxContainerResources) containertypes.Resources {
	return containertypes.Resources{
		CPUPeriod:  r.CpuPeriod,
		CPUQuota:   r.CpuQuota,
		CPUShares:  r.CpuShares,
		Memory:     r.MemoryLimitInBytes,
		MemorySwap: r.MemorySwapLimitInBytes,
		CpusetCpus: r.CpusetCpus,
		CpusetMems: r.CpusetMems,
	}
}

// bindMount is a CRI mount as the engine's bind. A missing source is made
// a directory, as the kubelet's runtimes do for host paths it prepared.
func bindMount(m *runtimeapi.Mount) (mount.Mount, error) {
	if m.GetImage() != nil {
		return imageVolumeMount(m)
	}
	if !filepath.IsAbs(m.HostPath) || !filepath.IsAbs(m.ContainerPath) {
		return mount.Mount{}, invalid("mount %q -> %q: both paths must be absolute", m.HostPath, m.ContainerPath)
	}
	if len(m.UidMappings) > 0 || len(m.GidMappings) > 0 {
		return mount.Mount{}, unimplemented("mount %q: ID-mapped mounts are not supported", m.ContainerPath)
	}
	if _, err := os.Stat(m.HostPath); os.IsNotExist(err) {
		if err := os.MkdirAll(m.HostPath, 0o755); err != nil {
			return mount.Mount{}, fmt.Errorf("mount source %s: %w", m.HostPath, err)
		}
	}
	prop := mount.PropagationRPrivate
	switch m.Propagation {
	case runtimeapi.MountPropagation_PROPAGATION_HOST_TO_CONTAINER:
		prop = mount.PropagationRSlave
	case runtimeapi.MountPropagation_PROPAGATION_BIDIRECTIONAL:
		prop = mount.PropagationRShared
	}
	bm := mount.Mount{
		Type: mount.TypeBind, Source: m.HostPath, Target: m.ContainerPath, ReadOnly: m.Readonly,
		BindOptions: &mount.BindOptions{Propagation: prop},
	}
	if m.RecursiveReadOnly {
		if !m.Readonly {
			return mount.Mount{}, invalid("mount %q: recursive read-only needs read-only", m.ContainerPath)
		}
		if m.Propagation != runtimeapi.MountPropagation_PROPAGATION_PRIVATE {
			return mount.Mount{}, invalid("mount %q: recursive read-only needs private propagation", m.ContainerPath)
		}
		bm.BindOptions.ReadOnlyForceRecursive = true
	} else if m.Readonly {
		// CRI's read-only is the top mount only; Docker's (API 1.44)
		// is recursive unless asked otherwise.
		bm.BindOptions.ReadOnlyNonRecursive = true
	}
	return bm, nil
}

// propagationOf is the CRI's name for a bind's propagation.
func propagationOf(p mount.Propagation) runtimeapi.MountPropagation {
	switch p {
	case mount.PropagationRSlave, mount.PropagationSlave:
		return runtimeapi.MountPropagation_PROPAGATION_HOST_TO_CONTAINER
	case mount.PropagationRShared, mount.PropagationShared:
		return runtimeapi.MountPropagation_PROPAGATION_BIDIRECTIONAL
	}
	return runtimeapi.MountPropagation_PROPAGATION_PRIVATE
}

// criLabels decodes the CRI labels or annotations kept in a Docker label.
func criLabels(docker map[string]string, key string) map[string]string {
	out := map[string]string{}
	if v := docker[key]; v != "" {
		_ = json.Unmarshal([]byte(v), &out)
	}
	return out
}
