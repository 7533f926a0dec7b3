//go:build integration

package integrationcli

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// criDaemon is a private dockerd serving the CRI, with a CNI network of
// its own (a bridge the test removes) and clients of both CRI services.
type criDaemon struct {
	*Daemon
	rs     runtimeapi.RuntimeServiceClient
	is     runtimeapi.ImageServiceClient
	ipam   string // host-local's lease directory
	subnet string // the pods' addresses start with it
}

// cniPlugins is where hack/cni-plugins builds the CNI plugins.
func cniPlugins(t *testing.T) string {
	t.Helper()
	home, _ := os.UserHomeDir()
	dir := filepath.Join(home, ".cache", "sdengine", "cni", "bin")
	for _, p := range []string{"bridge", "host-local", "loopback"} {
		if _, err := os.Stat(filepath.Join(dir, p)); err != nil {
			t.Fatalf("CNI plugin %s missing (hack/cni-plugins builds them): %v", p, err)
		}
	}
	return dir
}

func startCRIDaemon(t *testing.T) *criDaemon {
	t.Helper()
	d := NewDaemon(t)
	cd := &criDaemon{Daemon: d, ipam: filepath.Join(d.Dir, "ipam"), subnet: "10.239.3."}
	bridge := fmt.Sprintf("crit%d", os.Getpid()%100000)
	confDir := filepath.Join(d.Dir, "cni")
	if err := os.MkdirAll(confDir, 0o755); err != nil {
		t.Fatal(err)
	}
	conf := fmt.Sprintf(`{"cniVersion": "1.0.0", "name": "pods", "plugins": [
  {"type": "bridge", "bridge": %q, "isGateway": true, "ipMasq": false,
   "ipam": {"type": "host-local", "ranges": [[{"subnet": "10.239.3.0/24"}]], "dataDir": %q}}]}`, bridge, cd.ipam)
	if err := os.WriteFile(filepath.Join(confDir, "10-pods.conflist"), []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(d.Dir, "cri.sock")
	d.Args = append(d.Args, "--cri-socket", sock, "--cni-conf-dir", confDir, "--cni-bin-dir", cniPlugins(t))
	d.Start(t)
	t.Cleanup(func() {
		d.Cleanup(t)
		if l, err := netlink.LinkByName(bridge); err == nil {
			_ = netlink.LinkDel(l)
		}
	})
	loadBusybox(t, d)
	cc, err := grpc.NewClient("unix://"+sock, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cc.Close() })
	cd.rs, cd.is = runtimeapi.NewRuntimeServiceClient(cc), runtimeapi.NewImageServiceClient(cc)
	return cd
}

func podConfig(name string, pid runtimeapi.NamespaceMode) *runtimeapi.PodSandboxConfig {
	return &runtimeapi.PodSandboxConfig{
		Metadata:  &runtimeapi.PodSandboxMetadata{Name: name, Namespace: "test", Uid: "uid-" + name},
		Hostname:  name + "-host",
		DnsConfig: &runtimeapi.DNSConfig{Servers: []string{"10.239.3.53"}, Searches: []string{"test.svc"}},
		Linux: &runtimeapi.LinuxPodSandboxConfig{SecurityContext: &runtimeapi.LinuxSandboxSecurityContext{
			NamespaceOptions: &runtimeapi.NamespaceOption{Pid: pid},
		}},
	}
}

func (cd *criDaemon) runContainer(t *testing.T, ctx context.Context, podID string, pod *runtimeapi.PodSandboxConfig, name string, pid runtimeapi.NamespaceMode) string {
	t.Helper()
	cr, err := cd.rs.CreateContainer(ctx, &runtimeapi.CreateContainerRequest{
		PodSandboxId: podID,
		Config: &runtimeapi.ContainerConfig{
			Metadata: &runtimeapi.ContainerMetadata{Name: name},
			Image:    &runtimeapi.ImageSpec{Image: "busybox"},
			Command:  []string{"sleep", "300"},
			Linux: &runtimeapi.LinuxContainerConfig{SecurityContext: &runtimeapi.LinuxContainerSecurityContext{
				NamespaceOptions: &runtimeapi.NamespaceOption{Pid: pid},
			}},
		},
		SandboxConfig: pod,
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cd.rs.StartContainer(ctx, &runtimeapi.StartContainerRequest{ContainerId: cr.ContainerId}); err != nil {
		t.Fatal(err)
	}
	return cr.ContainerId
}

func (cd *criDaemon) execSync(t *testing.T, ctx context.Context, id string, timeout int64, cmd ...string) (*runtimeapi.ExecSyncResponse, error) {
	t.Helper()
	return cd.rs.ExecSync(ctx, &runtimeapi.ExecSyncRequest{ContainerId: id, Cmd: cmd, Timeout: timeout})
}

// podMounts are the mounts below the daemon's CRI run directory (pinned
// namespaces, the pods' /dev/shm).
func (cd *criDaemon) podMounts(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) > 4 && strings.HasPrefix(f[4], filepath.Join(cd.ExecRoot, "cri")+"/") {
			out = append(out, f[4])
		}
	}
	return out
}

// TestCRIPodLifecycle runs a pod through the CRI on a real CNI network: its
// host name, DNS and address; ExecSync and its timeout; a pod sharing a PID
// namespace; and that removing the pods leaves no mount, address, process
// or container behind.
func TestCRIPodLifecycle(t *testing.T) {
	cd := startCRIDaemon(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	st, err := cd.rs.Status(ctx, &runtimeapi.StatusRequest{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range st.Status.Conditions {
		if !c.Status {
			t.Fatalf("runtime condition %s is false: %s", c.Type, c.Message)
		}
	}

	pod := podConfig("web", runtimeapi.NamespaceMode_CONTAINER)
	rp, err := cd.rs.RunPodSandbox(ctx, &runtimeapi.RunPodSandboxRequest{Config: pod})
	if err != nil {
		t.Fatal(err)
	}
	ps, err := cd.rs.PodSandboxStatus(ctx, &runtimeapi.PodSandboxStatusRequest{PodSandboxId: rp.PodSandboxId})
	if err != nil {
		t.Fatal(err)
	}
	ip := ps.GetStatus().GetNetwork().GetIp()
	if ps.Status.State != runtimeapi.PodSandboxState_SANDBOX_READY || !strings.HasPrefix(ip, cd.subnet) {
		t.Fatalf("pod status %v, address %q", ps.Status.State, ip)
	}
	if _, err := os.Stat(filepath.Join(cd.ipam, "pods", ip)); err != nil {
		t.Fatalf("no lease for the pod's address: %v", err)
	}
	id := cd.runContainer(t, ctx, rp.PodSandboxId, pod, "main", runtimeapi.NamespaceMode_CONTAINER)

	r, err := cd.execSync(t, ctx, id, 10, "sh", "-c", "hostname; grep -E 'nameserver|search' /etc/resolv.conf; ip -4 -o addr show eth0; ps -o pid,args")
	if err != nil {
		t.Fatal(err)
	}
	out := string(r.Stdout)
	for _, want := range []string{"web-host\n", "nameserver 10.239.3.53", "search test.svc", "inet " + ip + "/24", "1 sleep 300"} {
		if !strings.Contains(out, want) {
			t.Errorf("in the pod: want %q in\n%s", want, out)
		}
	}
	if r, err := cd.execSync(t, ctx, id, 10, "sh", "-c", "echo oops >&2; exit 7"); err != nil || r.ExitCode != 7 || string(r.Stderr) != "oops\n" {
		t.Errorf("ExecSync exit 7: %v, %+v", err, r)
	}

	// A timed-out ExecSync is DeadlineExceeded, and its process is killed.
	start := time.Now()
	_, err = cd.execSync(t, ctx, id, 1, "sleep", "77")
	if status.Code(err) != codes.DeadlineExceeded || time.Since(start) > 10*time.Second {
		t.Errorf("ExecSync past its timeout: %v after %s", err, time.Since(start))
	}
	waitFor(t, func() bool {
		r, err := cd.execSync(t, ctx, id, 10, "ps", "-o", "args")
		return err == nil && !strings.Contains(string(r.Stdout), "sleep 77")
	})

	// A pod sharing its PID namespace: the infra process is PID 1 of it,
	// and both containers see each other.
	shared := podConfig("shared", runtimeapi.NamespaceMode_POD)
	rs, err := cd.rs.RunPodSandbox(ctx, &runtimeapi.RunPodSandboxRequest{Config: shared})
	if err != nil {
		t.Fatal(err)
	}
	a := cd.runContainer(t, ctx, rs.PodSandboxId, shared, "a", runtimeapi.NamespaceMode_POD)
	cd.runContainer(t, ctx, rs.PodSandboxId, shared, "b", runtimeapi.NamespaceMode_POD)
	r, err = cd.execSync(t, ctx, a, 10, "ps", "-o", "pid,args")
	if err != nil {
		t.Fatal(err)
	}
	if out := string(r.Stdout); !strings.Contains(out, "1 /") || !strings.Contains(out, "pod-infra") || strings.Count(out, "sleep 300") != 2 {
		t.Errorf("processes of the shared PID namespace:\n%s", out)
	}
	vs, err := cd.rs.PodSandboxStatus(ctx, &runtimeapi.PodSandboxStatusRequest{PodSandboxId: rs.PodSandboxId, Verbose: true})
	if err != nil {
		t.Fatal(err)
	}
	infra := vs.Info["pid"]
	if cmdline, err := os.ReadFile("/proc/" + infra + "/cmdline"); err != nil || !strings.Contains(string(cmdline), "pod-infra") {
		t.Fatalf("the pod's infra process %q: %q %v", infra, cmdline, err)
	}

	for _, p := range []string{rp.PodSandboxId, rs.PodSandboxId} {
		if _, err := cd.rs.StopPodSandbox(ctx, &runtimeapi.StopPodSandboxRequest{PodSandboxId: p}); err != nil {
			t.Fatal(err)
		}
		if _, err := cd.rs.RemovePodSandbox(ctx, &runtimeapi.RemovePodSandboxRequest{PodSandboxId: p}); err != nil {
			t.Fatal(err)
		}
	}
	if out := cd.MustCLI(t, "ps", "-aq"); out != "" {
		t.Errorf("containers left after the pods' removal: %s", out)
	}
	if m := cd.podMounts(t); len(m) > 0 {
		t.Errorf("mounts left after the pods' removal: %v", m)
	}
	if _, err := os.Stat(filepath.Join(cd.ipam, "pods", ip)); !os.IsNotExist(err) {
		t.Errorf("the pod's address %s is still leased: %v", ip, err)
	}
	if cmdline, err := os.ReadFile("/proc/" + infra + "/cmdline"); err == nil && strings.Contains(string(cmdline), "pod-infra") {
		t.Errorf("infra process %s still runs", infra)
	}
	if l, err := cd.rs.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{}); err != nil || len(l.Items) != 0 {
		t.Errorf("pods left: %v %v", l, err)
	}
}

// TestCRIBadInput: each bad request gets its gRPC code and leaves nothing.
func TestCRIBadInput(t *testing.T) {
	cd := startCRIDaemon(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	code := func(err error) codes.Code { return status.Code(err) }

	if _, err := cd.rs.RunPodSandbox(ctx, &runtimeapi.RunPodSandboxRequest{Config: &runtimeapi.PodSandboxConfig{}}); code(err) != codes.InvalidArgument {
		t.Errorf("pod without metadata: %v", err)
	}
	if _, err := cd.rs.RunPodSandbox(ctx, &runtimeapi.RunPodSandboxRequest{Config: podConfig("h", 0), RuntimeHandler: "kata"}); code(err) != codes.NotFound {
		t.Errorf("unknown runtime handler: %v", err)
	}
	// A pod's own user namespace is not built yet, and CONTAINER is no
	// mode for one: both are refused, not run in the node's namespace.
	for mode, want := range map[runtimeapi.NamespaceMode]codes.Code{
		runtimeapi.NamespaceMode_POD:       codes.Unimplemented,
		runtimeapi.NamespaceMode_CONTAINER: codes.InvalidArgument,
	} {
		cfg := podConfig("userns", 0)
		cfg.Linux.SecurityContext.NamespaceOptions.UsernsOptions = &runtimeapi.UserNamespace{Mode: mode,
			Uids: []*runtimeapi.IDMapping{{ContainerId: 0, HostId: 1000, Length: 65536}}}
		if _, err := cd.rs.RunPodSandbox(ctx, &runtimeapi.RunPodSandboxRequest{Config: cfg}); code(err) != want {
			t.Errorf("user namespace mode %v: %v, want %v", mode, err, want)
		}
	}
	// Stops and removals of what is not there succeed: the kubelet
	// retries them.
	if _, err := cd.rs.StopPodSandbox(ctx, &runtimeapi.StopPodSandboxRequest{PodSandboxId: "0123456789ab"}); err != nil {
		t.Errorf("stop an unknown pod: %v", err)
	}
	if _, err := cd.rs.StopContainer(ctx, &runtimeapi.StopContainerRequest{ContainerId: "0123456789ab"}); err != nil {
		t.Errorf("stop an unknown container: %v", err)
	}
	if _, err := cd.rs.RemovePodSandbox(ctx, &runtimeapi.RemovePodSandboxRequest{PodSandboxId: "0123456789ab"}); err != nil {
		t.Errorf("remove an unknown pod: %v", err)
	}
	if _, err := cd.rs.PodSandboxStatus(ctx, &runtimeapi.PodSandboxStatusRequest{PodSandboxId: "0123456789ab"}); code(err) != codes.NotFound {
		t.Errorf("status of an unknown pod: %v", err)
	}
	if _, err := cd.rs.ContainerStatus(ctx, &runtimeapi.ContainerStatusRequest{ContainerId: "0123456789ab"}); code(err) != codes.NotFound {
		t.Errorf("status of an unknown container: %v", err)
	}

	pod := podConfig("bad", runtimeapi.NamespaceMode_CONTAINER)
	rp, err := cd.rs.RunPodSandbox(ctx, &runtimeapi.RunPodSandboxRequest{Config: pod})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cd.rs.RunPodSandbox(ctx, &runtimeapi.RunPodSandboxRequest{Config: pod}); code(err) != codes.AlreadyExists {
		t.Errorf("a second pod of the same name: %v", err)
	}
	create := func(image string, podID string) error {
		_, err := cd.rs.CreateContainer(ctx, &runtimeapi.CreateContainerRequest{
			PodSandboxId:  podID,
			Config:        &runtimeapi.ContainerConfig{Metadata: &runtimeapi.ContainerMetadata{Name: "c"}, Image: &runtimeapi.ImageSpec{Image: image}},
			SandboxConfig: pod,
		})
		return err
	}
	if err := create("busybox", "0123456789ab"); code(err) != codes.NotFound {
		t.Errorf("a container in an unknown pod: %v", err)
	}
	if err := create("no-such-image:v1", rp.PodSandboxId); code(err) != codes.NotFound {
		t.Errorf("a container of a missing image: %v", err)
	}
	if _, err := cd.rs.CreateContainer(ctx, &runtimeapi.CreateContainerRequest{PodSandboxId: rp.PodSandboxId, SandboxConfig: pod,
		Config: &runtimeapi.ContainerConfig{Image: &runtimeapi.ImageSpec{Image: "busybox"}}}); code(err) != codes.InvalidArgument {
		t.Errorf("a container without metadata: %v", err)
	}
	if out := cd.MustCLI(t, "ps", "-aq"); out != "" {
		t.Errorf("failed creates left containers: %s", out)
	}
	if _, err := cd.is.PullImage(ctx, &runtimeapi.PullImageRequest{Image: &runtimeapi.ImageSpec{Image: "in valid"}}); code(err) != codes.InvalidArgument {
		t.Errorf("pull a malformed reference: %v", err)
	}
	if r, err := cd.is.ImageStatus(ctx, &runtimeapi.ImageStatusRequest{Image: &runtimeapi.ImageSpec{Image: "no-such-image:v1"}}); err != nil || r.Image != nil {
		t.Errorf("status of a missing image: %v, %v", r, err)
	}
	if _, err := cd.rs.RemovePodSandbox(ctx, &runtimeapi.RemovePodSandboxRequest{PodSandboxId: rp.PodSandboxId}); err != nil {
		t.Fatal(err)
	}
	if m := cd.podMounts(t); len(m) > 0 {
		t.Errorf("mounts left: %v", m)
	}
}

// TestCRIImages: the CRI's image service against a registry that needs
// credentials: a pull without them fails, with them it succeeds; status,
// list, file system usage and removal (twice: removal is idempotent).
func TestCRIImages(t *testing.T) {
	reg := startRegistry(t, true)
	cd := startCRIDaemon(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	repo := reg.Addr + "/private/busybox:v1"
	cd.MustCLI(t, "tag", "busybox", repo)
	cfg := t.TempDir()
	if r := runWithConfig(ourCLI, cd.Daemon, cfg, reg.Pass+"\n", "login", "-u", reg.User, "--password-stdin", reg.Addr); r.Code != 0 {
		t.Fatalf("login: %s", r)
	}
	if r := runWithConfig(ourCLI, cd.Daemon, cfg, "", "push", repo); r.Code != 0 {
		t.Fatalf("push: %s", r)
	}
	cd.MustCLI(t, "rmi", repo)

	spec := &runtimeapi.ImageSpec{Image: repo}
	if _, err := cd.is.PullImage(ctx, &runtimeapi.PullImageRequest{Image: spec}); err == nil {
		t.Fatal("pull without credentials succeeded")
	}
	pr, err := cd.is.PullImage(ctx, &runtimeapi.PullImageRequest{Image: spec,
		Auth: &runtimeapi.AuthConfig{Username: reg.User, Password: reg.Pass}})
	if err != nil {
		t.Fatalf("pull with credentials: %v", err)
	}
	st, err := cd.is.ImageStatus(ctx, &runtimeapi.ImageStatusRequest{Image: spec})
	if err != nil || st.Image == nil || st.Image.Id != pr.ImageRef || !slices.Contains(st.Image.RepoTags, repo) || st.Image.Size == 0 {
		t.Fatalf("status after pull: %v, %+v (pulled %s)", err, st.GetImage(), pr.ImageRef)
	}
	l, err := cd.is.ListImages(ctx, &runtimeapi.ListImagesRequest{})
	if err != nil || !slices.ContainsFunc(l.Images, func(i *runtimeapi.Image) bool { return i.Id == pr.ImageRef }) {
		t.Fatalf("list: %v, %v", err, l)
	}
	fs, err := cd.is.ImageFsInfo(ctx, &runtimeapi.ImageFsInfoRequest{})
	if err != nil || len(fs.ImageFilesystems) == 0 || fs.ImageFilesystems[0].UsedBytes.GetValue() == 0 {
		t.Fatalf("image fs info: %v, %v", err, fs)
	}
	for range 2 {
		if _, err := cd.is.RemoveImage(ctx, &runtimeapi.RemoveImageRequest{Image: &runtimeapi.ImageSpec{Image: pr.ImageRef}}); err != nil {
			t.Fatalf("remove: %v", err)
		}
	}
	if st, err := cd.is.ImageStatus(ctx, &runtimeapi.ImageStatusRequest{Image: spec}); err != nil || st.Image != nil {
		t.Errorf("status after removal: %v, %v", err, st.GetImage())
	}
}
