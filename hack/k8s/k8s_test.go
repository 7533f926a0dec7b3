//go:build k8s

// Package k8s holds the scenario hack/k8s/run runs against a real kubelet
// (standalone, static pods) and dockerd's CRI socket. It is not a unit
// test: it needs the namespace, daemon and kubelet that hack/k8s/run
// starts, and reads where they are from the environment (K8S_*).
package k8s

import (
	"bytes"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// podName is the static pod's name in its manifest; the kubelet appends
// its node's name (hack/k8s/run: k8s-node), as for any static pod.
const (
	podName = "k8s-e2e"
	podFull = podName + "-k8s-node"
)

// The kubelet, started by TestMain (and restarted by TestStaticPod) from
// K8S_KUBELET_CMD, its output appended to K8S_KUBELET_LOG.
var kubelet *exec.Cmd

func TestMain(m *testing.M) {
	if os.Getenv("K8S_KUBELET_CMD") == "" {
		os.Exit(m.Run()) // the tests skip
	}
	if err := startKubelet(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		stopKubelet()
		os.Exit(1)
	}
	code := m.Run()
	if err := saveMetrics(os.Getenv("K8S_METRICS")); err != nil {
		fmt.Fprintln(os.Stderr, err)
	}
	stopKubelet()
	os.Exit(code)
}

func startKubelet() error {
	f, err := os.OpenFile(os.Getenv("K8S_KUBELET_LOG"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer f.Close()
	args := strings.Fields(os.Getenv("K8S_KUBELET_CMD"))
	kubelet = exec.Command(args[0], args[1:]...)
	kubelet.Stdout, kubelet.Stderr = f, f
	if err := kubelet.Start(); err != nil {
		return fmt.Errorf("kubelet: %w", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- kubelet.Wait() }()
	start := time.Now()
	for time.Since(start) < 60*time.Second {
		select {
		case err := <-exited:
			kubelet = nil
			return fmt.Errorf("kubelet exited: %v (see %s)", err, os.Getenv("K8S_KUBELET_LOG"))
		default:
		}
		if resp, err := http.Get("http://127.0.0.1:10248/healthz"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				// Waited for by stopKubelet through this channel.
				kubeletExited = exited
				fmt.Fprintf(os.Stderr, "kubelet (pid %d) healthy after %.1fs\n", kubelet.Process.Pid, time.Since(start).Seconds())
				return nil
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	kubeletExited = exited
	return fmt.Errorf("kubelet not healthy after 60s")
}

var kubeletExited chan error

// stopKubelet ends the kubelet it started (SIGTERM, then SIGKILL after
// 20 s) and waits for it.
func stopKubelet() {
	if kubelet == nil || kubelet.Process == nil {
		return
	}
	kubelet.Process.Signal(syscall.SIGTERM)
	select {
	case <-kubeletExited:
	case <-time.After(20 * time.Second):
		kubelet.Process.Kill()
		<-kubeletExited
	}
	kubelet = nil
}

// kubeletClient talks to the kubelet's port on loopback of the run's
// namespace (anonymous, AlwaysAllow; a self-signed certificate).
var kubeletClient = &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
	TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, //nolint:gosec
}}

func saveMetrics(path string) error {
	if path == "" {
		return nil
	}
	resp, err := kubeletClient.Get("https://127.0.0.1:10250/metrics")
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	var b bytes.Buffer
	if _, err := b.ReadFrom(resp.Body); err != nil {
		return err
	}
	return os.WriteFile(path, b.Bytes(), 0o644)
}

func env(t *testing.T, name string) string {
	t.Helper()
	v := os.Getenv(name)
	if v == "" {
		t.Skipf("%s is not set: run hack/k8s/run (make k8s)", name)
	}
	return v
}

type setup struct {
	crictl, docker, dockerHost  string
	manifests, kubeletRoot      string
	podLogs, dataRoot, execRoot string
	ipamDir, image              string
}

func newSetup(t *testing.T) *setup {
	return &setup{
		crictl:      env(t, "K8S_CRICTL"),
		docker:      env(t, "K8S_DOCKER"),
		dockerHost:  env(t, "K8S_DOCKER_HOST"),
		manifests:   env(t, "K8S_MANIFESTS"),
		kubeletRoot: env(t, "K8S_KUBELET_ROOT"),
		podLogs:     env(t, "K8S_POD_LOGS"),
		dataRoot:    env(t, "K8S_DATA_ROOT"),
		execRoot:    env(t, "K8S_EXEC_ROOT"),
		ipamDir:     env(t, "K8S_IPAM_DIR"),
		image:       env(t, "K8S_IMAGE"),
	}
}

func run(name string, args ...string) (string, error) {
	var out, errb bytes.Buffer
	cmd := exec.Command(name, args...)
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return out.String(), fmt.Errorf("%s %s: %w: %s", filepath.Base(name), strings.Join(args, " "), err, errb.String())
	}
	return out.String(), nil
}

func (s *setup) crictlJSON(v any, args ...string) error {
	out, err := run(s.crictl, args...)
	if err != nil {
		return err
	}
	if err := json.Unmarshal([]byte(out), v); err != nil {
		return fmt.Errorf("crictl %v: %w: %s", args, err, out)
	}
	return nil
}

// sandboxes lists the pods crictl shows with the given filters.
func (s *setup) sandboxes(filters ...string) (podList, error) {
	var pl podList
	err := s.crictlJSON(&pl, append(append([]string{"pods"}, filters...), "-o", "json")...)
	return pl, err
}

// containers lists the containers crictl shows with the given filters.
func (s *setup) containers(filters ...string) (containerList, error) {
	var cl containerList
	err := s.crictlJSON(&cl, append(append([]string{"ps"}, filters...), "-o", "json")...)
	return cl, err
}

// readyPod is the one ready sandbox of the static pod name, or an error
// while there is none (or more than one).
func (s *setup) readyPod(name string) (id, uid string, err error) {
	pl, err := s.sandboxes("--name", name, "--state", "ready")
	if err != nil {
		return "", "", err
	}
	if len(pl.Items) != 1 {
		return "", "", fmt.Errorf("pods: %+v", pl.Items)
	}
	return pl.Items[0].ID, pl.Items[0].Metadata.UID, nil
}

// noSandboxes is nil once crictl lists no sandbox at all.
func (s *setup) noSandboxes() error {
	pl, err := s.sandboxes()
	if err != nil {
		return err
	}
	if len(pl.Items) > 0 {
		return fmt.Errorf("pods: %+v", pl.Items)
	}
	return nil
}

// noContainers is nil once the Docker API lists no container at all.
func (s *setup) noContainers() error {
	out, err := run(s.docker, "-H", s.dockerHost, "ps", "-a", "-q")
	if err != nil {
		return err
	}
	if strings.TrimSpace(out) != "" {
		return fmt.Errorf("containers: %q", out)
	}
	return nil
}

// deletePod removes a static pod's manifest and waits until the pod's
// sandbox and containers are gone: the kubelet stops the pod at once, and
// removes them at its next garbage collection (every minute).
func deletePod(t *testing.T, s *setup, manifestPath string) {
	t.Helper()
	if err := os.Remove(manifestPath); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the pod's sandbox and containers are removed", 150*time.Second, func() error {
		if err := s.noSandboxes(); err != nil {
			return err
		}
		return s.noContainers()
	})
}

type podList struct {
	Items []struct {
		ID       string `json:"id"`
		State    string `json:"state"`
		Metadata struct {
			Name, UID, Namespace string
		} `json:"metadata"`
	} `json:"items"`
}

type containerList struct {
	Containers []struct {
		ID           string `json:"id"`
		PodSandboxID string `json:"podSandboxId"`
		State        string `json:"state"`
		Metadata     struct {
			Name    string
			Attempt int
		} `json:"metadata"`
	} `json:"containers"`
}

// waitFor polls cond until it returns nil or the timeout passes.
func waitFor(t *testing.T, what string, timeout time.Duration, cond func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		err := cond()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not after %s: %v", what, timeout, err)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// podYAML is a static pod's manifest: the header every pod here has
// (namespace default, 5 s to stop), then spec's fields, formatted with
// args (args[0] being the pod's name, %[1]s).
func podYAML(spec string, args ...any) string {
	return fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: %[1]s
  namespace: default
spec:
  terminationGracePeriodSeconds: 5
`+spec, args...)
}

// The pod: two containers sharing an emptyDir (the writer writes a file,
// the reader waits for it and prints it), an exec liveness probe on the
// writer that appends to a file in that volume, so that each ExecSync the
// kubelet makes leaves a line. Both containers stop at once on SIGTERM.
func manifest(image string) string {
	return podYAML(`  volumes:
  - name: shared
    emptyDir: {}
  containers:
  - name: writer
    image: %[2]s
    imagePullPolicy: Never
    command: ["sh", "-c", "trap 'exit 0' TERM; echo hello-from-writer > /data/msg; echo writer wrote; while true; do sleep 0.2; done"]
    volumeMounts:
    - {name: shared, mountPath: /data}
    livenessProbe:
      exec:
        command: ["sh", "-c", "echo probe >> /data/probe"]
      periodSeconds: 1
      timeoutSeconds: 5
  - name: reader
    image: %[2]s
    imagePullPolicy: Never
    command: ["sh", "-c", "trap 'exit 0' TERM; while [ ! -f /data/msg ]; do sleep 0.1; done; echo \"reader got: $(cat /data/msg)\"; while true; do sleep 0.2; done"]
    volumeMounts:
    - {name: shared, mountPath: /data}
`, podName, image)
}

func TestStaticPod(t *testing.T) {
	s := newSetup(t)
	start := time.Now()
	manifestPath := addManifest(t, s, podName, manifest(s.image))

	// --- the pod runs ---------------------------------------------------
	var podID, podUID string
	waitFor(t, "crictl pods lists the pod ready", 120*time.Second, func() (err error) {
		podID, podUID, err = s.readyPod(podName)
		return err
	})
	ids := map[string]string{}
	waitFor(t, "crictl ps lists both containers running", 120*time.Second, func() error {
		cl, err := s.containers("--pod", podID)
		if err != nil {
			return err
		}
		for _, c := range cl.Containers {
			if c.State == "CONTAINER_RUNNING" {
				ids[c.Metadata.Name] = c.ID
			}
		}
		if ids["writer"] == "" || ids["reader"] == "" {
			return fmt.Errorf("containers: %+v", cl.Containers)
		}
		return nil
	})
	t.Logf("pod %s (uid %s) and both containers running %.1fs after the manifest appeared", podID[:12], podUID, time.Since(start).Seconds())

	// The Docker API sees the same containers.
	out, err := run(s.docker, "-H", s.dockerHost, "ps", "--format", "{{.Names}}")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"writer", "reader"} {
		if !strings.Contains(out, "k8s_"+name+"_"+podFull+"_default_"+podUID) {
			t.Errorf("docker ps has no k8s_%s_%s_default_%s_0: %q", name, podFull, podUID, out)
		}
	}

	// The containers are in the cgroups the kubelet chose: the pod's below
	// its QoS class's (cgroupfs driver: /kubepods/besteffort/pod<uid>).
	for _, name := range []string{"writer", "reader"} {
		pid, err := run(s.docker, "-H", s.dockerHost, "inspect", "-f", "{{.State.Pid}}", ids[name])
		if err != nil {
			t.Fatal(err)
		}
		cg, err := os.ReadFile("/proc/" + strings.TrimSpace(pid) + "/cgroup")
		if err != nil {
			t.Fatal(err)
		}
		want := ":memory:/kubepods/besteffort/pod" + podUID + "/"
		if !strings.Contains(string(cg), want) {
			t.Errorf("%s's cgroups have no %s: %s", name, want, cg)
		}
	}

	// --- the shared volume and the logs ----------------------------------
	waitFor(t, "crictl logs shows what the reader read from the writer", 30*time.Second, func() error {
		out, err := run(s.crictl, "logs", ids["reader"])
		if err != nil {
			return err
		}
		if !strings.Contains(out, "reader got: hello-from-writer") {
			return fmt.Errorf("reader's log: %q", out)
		}
		return nil
	})
	out, err = run(s.crictl, "logs", ids["writer"])
	if err != nil || !strings.Contains(out, "writer wrote") {
		t.Errorf("writer's log: %q, %v", out, err)
	}
	// The files the kubelet chose: <podLogsDir>/<ns>_<name>_<uid>/<container>/0.log,
	// in the CRI format: <time> <stream> <P|F> <line>.
	for name, want := range map[string]string{"writer": "writer wrote", "reader": "reader got: hello-from-writer"} {
		p := filepath.Join(s.podLogs, "default_"+podFull+"_"+podUID, name, "0.log")
		b, err := os.ReadFile(p)
		if err != nil {
			t.Errorf("log file: %v", err)
			continue
		}
		line, _, _ := strings.Cut(string(b), "\n")
		f := strings.SplitN(line, " ", 4)
		if len(f) != 4 || f[1] != "stdout" || f[2] != "F" || f[3] != want {
			t.Errorf("%s: first line %q, want <time> stdout F %s", p, line, want)
		} else if _, err := time.Parse(time.RFC3339Nano, f[0]); err != nil {
			t.Errorf("%s: time %q: %v", p, f[0], err)
		}
	}

	// crictl exec goes through the streaming server; the reader sees the
	// writer's file there too.
	out, err = run(s.crictl, "exec", ids["reader"], "cat", "/data/msg")
	if err != nil || strings.TrimSpace(out) != "hello-from-writer" {
		t.Errorf("crictl exec reader cat /data/msg: %q, %v", out, err)
	}

	// --- the liveness probe runs (ExecSync), and passes --------------------
	probe := filepath.Join(s.kubeletRoot, "pods", podUID, "volumes", "kubernetes.io~empty-dir", "shared", "probe")
	waitFor(t, "the liveness probe ran 3 times", 30*time.Second, func() error {
		b, err := os.ReadFile(probe)
		if err != nil {
			return err
		}
		if n := strings.Count(string(b), "probe\n"); n < 3 {
			return fmt.Errorf("%d probes", n)
		}
		return nil
	})
	cl, err := s.containers("-a", "--pod", podID)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cl.Containers {
		if c.Metadata.Attempt != 0 || c.State != "CONTAINER_RUNNING" {
			t.Errorf("container %s attempt %d %s: the probe should pass and nothing restart", c.Metadata.Name, c.Metadata.Attempt, c.State)
		}
	}

	// --- the kubelet's stats of the pod (from the CRI's stats calls) ----
	waitFor(t, "the kubelet's /stats/summary has the pod's containers", 60*time.Second, func() error {
		return summaryHas(podFull, "writer", "reader")
	})

	// --- what the pod holds on the node ------------------------------------
	var insp struct {
		Status struct {
			Network struct{ IP string } `json:"network"`
		} `json:"status"`
	}
	if err := s.crictlJSON(&insp, "inspectp", "-o", "json", podID); err != nil {
		t.Fatal(err)
	}
	ip := insp.Status.Network.IP
	if ip == "" {
		t.Fatal("inspectp: the pod has no IP")
	}
	lease := filepath.Join(s.ipamDir, "k8s-pods", ip)
	if _, err := os.Stat(lease); err != nil {
		t.Errorf("host-local lease of %s: %v", ip, err)
	}
	if n := cniCacheEntries(t, s, podID); n == 0 {
		t.Errorf("no CNI cache entry for %s below %s", podID, filepath.Join(s.dataRoot, "cri", "cni"))
	}
	if m := nsMounts(t, s); len(m) == 0 {
		t.Errorf("no namespace pinned below %s", s.execRoot)
	}
	t.Logf("pod IP %s; startup to checks done %.1fs", ip, time.Since(start).Seconds())

	// --- the kubelet restarts and adopts the pod ----------------------------
	// A restarted kubelet rebuilds its view from the runtime (ListPodSandbox,
	// ListContainers, their labels and annotations): it must find the pod
	// it made and keep it, not make a new one or restart the containers.
	probes := func() int {
		b, _ := os.ReadFile(probe)
		return strings.Count(string(b), "probe\n")
	}
	// The first kubelet's measures, before the restart resets them.
	if err := saveMetrics(os.Getenv("K8S_METRICS_FIRST")); err != nil {
		t.Error(err)
	}
	stopKubelet()
	if err := startKubelet(); err != nil {
		t.Fatal(err)
	}
	before := probes()
	waitFor(t, "the probe runs again after the kubelet's restart", 30*time.Second, func() error {
		if n := probes(); n < before+3 {
			return fmt.Errorf("%d probes, %d before", n, before)
		}
		return nil
	})
	pl, err := s.sandboxes()
	if err != nil {
		t.Fatal(err)
	}
	if len(pl.Items) != 1 || pl.Items[0].ID != podID || pl.Items[0].State != "SANDBOX_READY" {
		t.Errorf("sandboxes after the kubelet's restart: %+v, want only %s ready", pl.Items, podID)
	}
	if cl, err = s.containers("-a"); err != nil {
		t.Fatal(err)
	}
	for _, c := range cl.Containers {
		if ids[c.Metadata.Name] != c.ID || c.State != "CONTAINER_RUNNING" {
			t.Errorf("after the kubelet's restart: container %s %s attempt %d %s, want %s running", c.Metadata.Name, c.ID[:12], c.Metadata.Attempt, c.State, ids[c.Metadata.Name][:12])
		}
	}
	if len(cl.Containers) != 2 {
		t.Errorf("after the kubelet's restart: %d containers, want 2", len(cl.Containers))
	}

	// --- deleting the manifest removes everything -------------------------
	delStart := time.Now()
	deletePod(t, s, manifestPath)
	t.Logf("the sandbox and containers were removed %.1fs after the manifest", time.Since(delStart).Seconds())
	if _, err := os.Stat(lease); !os.IsNotExist(err) {
		t.Errorf("host-local lease %s is still there (%v)", lease, err)
	}
	if n := cniCacheEntries(t, s, podID); n != 0 {
		t.Errorf("%d CNI cache entries for %s remain", n, podID)
	}
	if m := nsMounts(t, s); len(m) != 0 {
		t.Errorf("namespaces still pinned: %q", m)
	}
	if _, err := os.Stat(filepath.Join(s.execRoot, "cri", podID)); !os.IsNotExist(err) {
		t.Errorf("the pod's directory below the exec root is still there (%v)", err)
	}
}

// cniCacheEntries counts the files of libcni's cache that name the pod.
func cniCacheEntries(t *testing.T, s *setup, podID string) int {
	t.Helper()
	n := 0
	root := filepath.Join(s.dataRoot, "cri", "cni")
	filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.Contains(d.Name(), podID) {
			n++
		}
		return nil
	})
	return n
}

// nsMounts lists the mounts below the exec root's cri directory: the
// pinned namespaces and the pods' files.
func nsMounts(t *testing.T, s *setup) []string {
	t.Helper()
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	var m []string
	prefix := filepath.Join(s.execRoot, "cri") + "/"
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) > 4 && strings.HasPrefix(f[4], prefix) {
			m = append(m, f[4])
		}
	}
	return m
}

// summaryHas asks the kubelet's /stats/summary (its port is on loopback of
// the run's namespace; anonymous, AlwaysAllow) for the pod's containers,
// each with CPU and memory figures.
func summaryHas(pod string, containers ...string) error {
	resp, err := kubeletClient.Get("https://127.0.0.1:10250/stats/summary")
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	var sum struct {
		Pods []struct {
			PodRef     struct{ Name string } `json:"podRef"`
			Containers []struct {
				Name   string                                  `json:"name"`
				CPU    *struct{ UsageCoreNanoSeconds *uint64 } `json:"cpu"`
				Memory *struct{ WorkingSetBytes *uint64 }      `json:"memory"`
			} `json:"containers"`
		} `json:"pods"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&sum); err != nil {
		return fmt.Errorf("stats/summary: %s: %w", resp.Status, err)
	}
	for _, p := range sum.Pods {
		if p.PodRef.Name != pod {
			continue
		}
		found := map[string]bool{}
		for _, c := range p.Containers {
			if c.CPU != nil && c.CPU.UsageCoreNanoSeconds != nil && c.Memory != nil && c.Memory.WorkingSetBytes != nil {
				found[c.Name] = true
			}
		}
		for _, n := range containers {
			if !found[n] {
				return fmt.Errorf("stats/summary: pod %s: no CPU and memory of %s: %+v", pod, n, p.Containers)
			}
		}
		return nil
	}
	return fmt.Errorf("stats/summary: no pod %s", pod)
}

// addManifest puts a static pod's manifest in place (written beside it as a
// dot file, which the kubelet ignores, then renamed) and returns its path.
// The manifest goes when the test ends, if the test did not remove it.
func addManifest(t *testing.T, s *setup, name, yaml string) string {
	t.Helper()
	p := filepath.Join(s.manifests, name+".yaml")
	tmp := filepath.Join(s.manifests, "."+name+".yaml")
	if err := os.WriteFile(tmp, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, p); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Remove(p) })
	return p
}

// TestLivenessRestart: a liveness probe that fails once (its third run)
// makes the kubelet kill the container and start attempt 1 of it, logging
// to 1.log beside 0.log; the probe passes from then on.
func TestLivenessRestart(t *testing.T) {
	s := newSetup(t)
	const name = "k8s-restart"
	full := name + "-k8s-node"
	yaml := podYAML(`  volumes:
  - name: state
    emptyDir: {}
  containers:
  - name: app
    image: %[2]s
    imagePullPolicy: Never
    command: ["sh", "-c", "trap 'exit 0' TERM; echo started; while true; do sleep 0.2; done"]
    volumeMounts:
    - {name: state, mountPath: /state}
    livenessProbe:
      exec:
        command: ["sh", "-c", "n=$(cat /state/n 2>/dev/null || echo 0); n=$((n+1)); echo $n > /state/n; [ $n -ne 3 ]"]
      periodSeconds: 1
      failureThreshold: 1
`, name, s.image)
	manifestPath := addManifest(t, s, name, yaml)

	var podID, podUID string
	waitFor(t, "the pod's container runs as attempt 1", 120*time.Second, func() error {
		var err error
		if podID, podUID, err = s.readyPod(name); err != nil {
			return err
		}
		cl, err := s.containers("-a", "--pod", podID)
		if err != nil {
			return err
		}
		states := map[int]string{}
		for _, c := range cl.Containers {
			states[c.Metadata.Attempt] = c.State
		}
		if states[0] != "CONTAINER_EXITED" || states[1] != "CONTAINER_RUNNING" {
			return fmt.Errorf("attempts: %v", states)
		}
		return nil
	})
	dir := filepath.Join(s.podLogs, "default_"+full+"_"+podUID, "app")
	for _, f := range []string{"0.log", "1.log"} {
		waitFor(t, "app's "+f+" says started", 10*time.Second, func() error {
			b, err := os.ReadFile(filepath.Join(dir, f))
			if err != nil {
				return err
			}
			if !strings.Contains(string(b), " stdout F started\n") {
				return fmt.Errorf("%s: %q", f, b)
			}
			return nil
		})
	}
	// No further restart: the probe passes after its one failure.
	time.Sleep(3 * time.Second)
	cl, err := s.containers("-a", "--pod", podID)
	if err != nil {
		t.Fatal(err)
	}
	if len(cl.Containers) != 2 {
		t.Errorf("containers after the restart: %+v", cl.Containers)
	}

	deletePod(t, s, manifestPath)
}

// TestPodFeatures: what else a kubelet asks of the runtime for ordinary
// pods: an init container (runs to completion before the others), a
// shared PID namespace (the engine's infra process), a Guaranteed pod
// (its own cgroup below kubepods, the memory limit on the container), a
// non-root user, and a hostPort (portmap) reached on the node's address.
func TestPodFeatures(t *testing.T) {
	s := newSetup(t)
	const name = "k8s-features"
	full := name + "-k8s-node"
	const hostPort = 18080
	yaml := podYAML(`  shareProcessNamespace: true
  volumes:
  - name: www
    emptyDir: {}
  initContainers:
  - name: init
    image: %[2]s
    imagePullPolicy: Never
    command: ["sh", "-c", "echo made-by-init > /www/index.html"]
    volumeMounts:
    - {name: www, mountPath: /www}
    resources:
      limits: {cpu: 100m, memory: 64Mi}
  containers:
  - name: web
    image: %[2]s
    imagePullPolicy: Never
    command: ["httpd", "-f", "-p", "8080", "-h", "/www"]
    ports:
    - {containerPort: 8080, hostPort: %[3]d}
    volumeMounts:
    - {name: www, mountPath: /www}
    securityContext:
      runAsUser: 1000
      runAsGroup: 1000
    resources:
      limits: {cpu: 100m, memory: 64Mi}
  - name: side
    image: %[2]s
    imagePullPolicy: Never
    command: ["sh", "-c", "trap 'exit 0' TERM; while true; do sleep 0.2; done"]
    resources:
      limits: {cpu: 100m, memory: 64Mi}
`, name, s.image, hostPort)
	manifestPath := addManifest(t, s, name, yaml)

	var podID, podUID string
	ids := map[string]string{}
	states := map[string]string{}
	waitFor(t, "web and side run after init exited", 120*time.Second, func() error {
		var err error
		if podID, podUID, err = s.readyPod(name); err != nil {
			return err
		}
		cl, err := s.containers("-a", "--pod", podID)
		if err != nil {
			return err
		}
		for _, c := range cl.Containers {
			ids[c.Metadata.Name], states[c.Metadata.Name] = c.ID, c.State
		}
		if states["init"] != "CONTAINER_EXITED" || states["web"] != "CONTAINER_RUNNING" || states["side"] != "CONTAINER_RUNNING" {
			return fmt.Errorf("states: %v", states)
		}
		return nil
	})
	var st struct {
		Status struct{ ExitCode int } `json:"status"`
	}
	if err := s.crictlJSON(&st, "inspect", "-o", "json", ids["init"]); err != nil || st.Status.ExitCode != 0 {
		t.Errorf("init's exit code %d (%v)", st.Status.ExitCode, err)
	}

	// The hostPort, on the node's address, serves what init wrote.
	waitFor(t, "GET through the hostPort", 20*time.Second, func() error {
		c := &http.Client{Timeout: 2 * time.Second}
		resp, err := c.Get(fmt.Sprintf("http://192.0.2.10:%d/index.html", hostPort))
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		var b bytes.Buffer
		b.ReadFrom(resp.Body)
		if strings.TrimSpace(b.String()) != "made-by-init" {
			return fmt.Errorf("%s: %q", resp.Status, b.String())
		}
		return nil
	})

	// The user, and the shared PID namespace: side sees web's httpd.
	if out, err := run(s.crictl, "exec", ids["web"], "id", "-u"); err != nil || strings.TrimSpace(out) != "1000" {
		t.Errorf("web's uid: %q, %v", out, err)
	}
	if out, err := run(s.crictl, "exec", ids["side"], "ps", "-o", "pid,args"); err != nil || !strings.Contains(out, "httpd -f -p 8080") {
		t.Errorf("side's ps does not show web's httpd: %q, %v", out, err)
	}

	// Guaranteed: the pod's cgroup is kubepods/pod<uid>, and the memory
	// limit is on the container's.
	pid, err := run(s.docker, "-H", s.dockerHost, "inspect", "-f", "{{.State.Pid}}", ids["web"])
	if err != nil {
		t.Fatal(err)
	}
	cg, err := os.ReadFile("/proc/" + strings.TrimSpace(pid) + "/cgroup")
	if err != nil {
		t.Fatal(err)
	}
	var memPath string
	for _, line := range strings.Split(string(cg), "\n") {
		if p, ok := strings.CutPrefix(line, strings.SplitN(line, ":", 3)[0]+":memory:"); ok {
			memPath = p
		}
	}
	if !strings.HasPrefix(memPath, "/kubepods/pod"+podUID+"/") {
		t.Errorf("web's memory cgroup %q, want below /kubepods/pod%s", memPath, podUID)
	} else if b, err := os.ReadFile(filepath.Join("/sys/fs/cgroup/memory", memPath, "memory.limit_in_bytes")); err != nil || strings.TrimSpace(string(b)) != "67108864" {
		t.Errorf("web's memory limit: %q, %v", b, err)
	}

	deletePod(t, s, manifestPath)
	_ = full
}
