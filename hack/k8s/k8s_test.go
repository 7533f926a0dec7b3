//go:build k8s

// Package k8s holds the scenario hack/k8s/run runs against a real kubelet
// (standalone, static pods) and dockerd's CRI socket. It is not a unit
// test: it needs the namespace, daemon and kubelet that hack/k8s/run
// starts, and reads where they are from the environment (K8S_*).
package k8s

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// podName is the static pod's name in its manifest; the kubelet appends
// its node's name (hack/k8s/run: k8s-node), as for any static pod.
const (
	podName = "k8s-e2e"
	podFull = podName + "-k8s-node"
)

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

// The pod: two containers sharing an emptyDir (the writer writes a file,
// the reader waits for it and prints it), an exec liveness probe on the
// writer that appends to a file in that volume, so that each ExecSync the
// kubelet makes leaves a line. Both containers stop at once on SIGTERM.
func manifest(image string) string {
	return fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: %[1]s
  namespace: default
spec:
  terminationGracePeriodSeconds: 5
  volumes:
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
	manifestPath := filepath.Join(s.manifests, podName+".yaml")
	// The kubelet ignores dot files: write, then rename into place.
	tmp := filepath.Join(s.manifests, "."+podName+".yaml")
	if err := os.WriteFile(tmp, []byte(manifest(s.image)), 0o644); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := os.Rename(tmp, manifestPath); err != nil {
		t.Fatal(err)
	}
	deleted := false
	defer func() {
		if !deleted {
			os.Remove(manifestPath)
		}
	}()

	// --- the pod runs ---------------------------------------------------
	var podID, podUID string
	waitFor(t, "crictl pods lists the pod ready", 120*time.Second, func() error {
		var pl podList
		if err := s.crictlJSON(&pl, "pods", "--name", podName, "-o", "json"); err != nil {
			return err
		}
		for _, p := range pl.Items {
			if p.State == "SANDBOX_READY" && p.Metadata.Name == podFull {
				podID, podUID = p.ID, p.Metadata.UID
				return nil
			}
		}
		return fmt.Errorf("pods: %+v", pl.Items)
	})
	ids := map[string]string{}
	waitFor(t, "crictl ps lists both containers running", 120*time.Second, func() error {
		var cl containerList
		if err := s.crictlJSON(&cl, "ps", "--pod", podID, "-o", "json"); err != nil {
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
	var cl containerList
	if err := s.crictlJSON(&cl, "ps", "-a", "--pod", podID, "-o", "json"); err != nil {
		t.Fatal(err)
	}
	for _, c := range cl.Containers {
		if c.Metadata.Attempt != 0 || c.State != "CONTAINER_RUNNING" {
			t.Errorf("container %s attempt %d %s: the probe should pass and nothing restart", c.Metadata.Name, c.Metadata.Attempt, c.State)
		}
	}

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

	// --- deleting the manifest removes everything -------------------------
	delStart := time.Now()
	if err := os.Remove(manifestPath); err != nil {
		t.Fatal(err)
	}
	deleted = true
	// The kubelet stops the pod at once; its containers and sandbox go at
	// its next garbage collection (every minute).
	waitFor(t, "crictl pods lists no sandbox", 150*time.Second, func() error {
		var pl podList
		if err := s.crictlJSON(&pl, "pods", "-o", "json"); err != nil {
			return err
		}
		if len(pl.Items) > 0 {
			return fmt.Errorf("pods: %+v", pl.Items)
		}
		return nil
	})
	t.Logf("the sandbox was removed %.1fs after the manifest", time.Since(delStart).Seconds())
	waitFor(t, "docker ps -a lists no container", 30*time.Second, func() error {
		out, err := run(s.docker, "-H", s.dockerHost, "ps", "-a", "-q")
		if err != nil {
			return err
		}
		if strings.TrimSpace(out) != "" {
			return fmt.Errorf("containers: %q", out)
		}
		return nil
	})
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
