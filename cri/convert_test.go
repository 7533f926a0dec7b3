package cri

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/docker/docker/api/types/mount"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/sdengine/engine/cri/podinfra"
)

func testSandbox() *sandbox {
	return &sandbox{
		ID: "0123456789abcdef", Dir: "/run/x/0123456789abcdef",
		NetNS: "/run/x/ns/net", IPCNS: "/run/x/ns/ipc", UTSNS: "/run/x/ns/uts", ShmDir: "/run/x/shm",
		config: &runtimeapi.PodSandboxConfig{
			Metadata:     &runtimeapi.PodSandboxMetadata{Name: "web", Namespace: "default", Uid: "u1"},
			Hostname:     "web-0",
			LogDirectory: "/var/log/pods/u1",
		},
	}
}

func testContainer(sec *runtimeapi.LinuxContainerSecurityContext) *runtimeapi.ContainerConfig {
	return &runtimeapi.ContainerConfig{
		Metadata: &runtimeapi.ContainerMetadata{Name: "app", Attempt: 2},
		Image:    &runtimeapi.ImageSpec{Image: "busybox"},
		Command:  []string{"sleep"}, Args: []string{"1"},
		LogPath: "app/2.log",
		Linux:   &runtimeapi.LinuxContainerConfig{SecurityContext: sec},
	}
}

func TestCreateParams(t *testing.T) {
	sb := testSandbox()
	sec := &runtimeapi.LinuxContainerSecurityContext{
		RunAsUser:          &runtimeapi.Int64Value{Value: 1000},
		RunAsGroup:         &runtimeapi.Int64Value{Value: 3000},
		SupplementalGroups: []int64{4000},
		NoNewPrivs:         true,
		ReadonlyRootfs:     true,
		Seccomp:            &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_RuntimeDefault},
		Capabilities:       &runtimeapi.Capability{AddCapabilities: []string{"NET_ADMIN"}, DropCapabilities: []string{"ALL"}},
	}
	p, err := createParams(sb, testContainer(sec), "sha256:abc")
	if err != nil {
		t.Fatal(err)
	}
	c, hc := p.Config, p.HostConfig
	if p.Name != "k8s_app_web_default_u1_2" {
		t.Errorf("name %q", p.Name)
	}
	if c.User != "1000:3000" || !slices.Equal(hc.GroupAdd, []string{"4000"}) {
		t.Errorf("user %q, groups %v", c.User, hc.GroupAdd)
	}
	if !slices.Equal(c.Entrypoint, []string{"sleep"}) || !slices.Equal(c.Cmd, []string{"1"}) {
		t.Errorf("entrypoint %v, cmd %v", c.Entrypoint, c.Cmd)
	}
	if !hc.ReadonlyRootfs || !slices.Contains(hc.SecurityOpt, "no-new-privileges=true") {
		t.Errorf("read-only %v, security options %v", hc.ReadonlyRootfs, hc.SecurityOpt)
	}
	if slices.ContainsFunc(hc.SecurityOpt, func(o string) bool { return strings.HasPrefix(o, "seccomp=") }) {
		t.Errorf("RuntimeDefault is the engine's profile, not an option: %v", hc.SecurityOpt)
	}
	if hc.LogConfig.Type != "cri" || hc.LogConfig.Config["path"] != "/var/log/pods/u1/app/2.log" {
		t.Errorf("log config %+v", hc.LogConfig)
	}
	if pod := p.Pod; pod == nil || pod.NetNS != sb.NetNS || pod.Hostname != "web-0" || pod.PIDNS != "" {
		t.Errorf("pod %+v", p.Pod)
	}

	// Privileged: no seccomp, whatever profile is named.
	priv := &runtimeapi.LinuxContainerSecurityContext{Privileged: true,
		Seccomp: &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_Localhost, LocalhostRef: "/nonexistent.json"}}
	if p, err := createParams(sb, testContainer(priv), "sha256:abc"); err != nil || !slices.Contains(p.HostConfig.SecurityOpt, "seccomp=unconfined") {
		t.Errorf("privileged: %v, %v", err, p.HostConfig)
	}
	// No profile at all is unconfined for the CRI.
	if p, err := createParams(sb, testContainer(nil), "sha256:abc"); err != nil || !slices.Contains(p.HostConfig.SecurityOpt, "seccomp=unconfined") {
		t.Errorf("no profile: %v, %v", err, p.HostConfig)
	}

	// A pod sharing its PID namespace: containers in POD mode join it.
	sb.Infra = &podinfra.Process{PID: 4242}
	shared := &runtimeapi.LinuxContainerSecurityContext{NamespaceOptions: &runtimeapi.NamespaceOption{Pid: runtimeapi.NamespaceMode_POD}}
	if p, err := createParams(sb, testContainer(shared), "sha256:abc"); err != nil || p.Pod.PIDNS != "/proc/4242/ns/pid" {
		t.Errorf("shared PID: %v, %+v", err, p.Pod)
	}
}

func TestCreateParamsInvalid(t *testing.T) {
	sb := testSandbox()
	for name, sec := range map[string]*runtimeapi.LinuxContainerSecurityContext{
		"group without user": {RunAsGroup: &runtimeapi.Int64Value{Value: 5}},
		"relative localhost profile": {Seccomp: &runtimeapi.SecurityProfile{
			ProfileType: runtimeapi.SecurityProfile_Localhost, LocalhostRef: "profile.json"}},
		"TARGET without a target": {NamespaceOptions: &runtimeapi.NamespaceOption{Pid: runtimeapi.NamespaceMode_TARGET}},
	} {
		if _, err := createParams(sb, testContainer(sec), "sha256:abc"); status.Code(err) != codes.InvalidArgument {
			t.Errorf("%s: %v, want InvalidArgument", name, err)
		}
	}
}

func TestBindMount(t *testing.T) {
	dir := t.TempDir()
	m, err := bindMount(&runtimeapi.Mount{HostPath: dir, ContainerPath: "/data", Readonly: true,
		Propagation: runtimeapi.MountPropagation_PROPAGATION_HOST_TO_CONTAINER})
	if err != nil {
		t.Fatal(err)
	}
	if m.Type != mount.TypeBind || !m.ReadOnly || m.BindOptions.Propagation != mount.PropagationRSlave || !m.BindOptions.ReadOnlyNonRecursive {
		t.Errorf("mount %+v %+v", m, m.BindOptions)
	}
	if propagationOf(m.BindOptions.Propagation) != runtimeapi.MountPropagation_PROPAGATION_HOST_TO_CONTAINER {
		t.Error("propagation does not round-trip")
	}
	// A missing source directory is made, as the kubelet expects.
	missing := filepath.Join(dir, "made")
	if _, err := bindMount(&runtimeapi.Mount{HostPath: missing, ContainerPath: "/m"}); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(missing); err != nil || !fi.IsDir() {
		t.Errorf("source not made: %v", err)
	}
	for name, bad := range map[string]*runtimeapi.Mount{
		"relative host path":   {HostPath: "rel", ContainerPath: "/x"},
		"relative target":      {HostPath: dir, ContainerPath: "x"},
		"rro without ro":       {HostPath: dir, ContainerPath: "/x", RecursiveReadOnly: true},
		"rro with propagation": {HostPath: dir, ContainerPath: "/x", RecursiveReadOnly: true, Readonly: true, Propagation: runtimeapi.MountPropagation_PROPAGATION_BIDIRECTIONAL},
	} {
		if _, err := bindMount(bad); status.Code(err) != codes.InvalidArgument {
			t.Errorf("%s: %v, want InvalidArgument", name, err)
		}
	}
}
