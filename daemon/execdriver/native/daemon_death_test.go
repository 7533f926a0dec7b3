package native

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"

	"github.com/sdengine/engine/daemon/execdriver"
	"github.com/sdengine/engine/daemon/oci"
)

// fakeDaemon is a separate "daemon" process: it creates and starts a
// container, reports, and waits to be SIGKILLed.
func fakeDaemon(arg string) {
	parts := strings.Split(arg, ",") // execRoot,id,rootfs,cgroupParent
	self, _ := os.Executable()
	d, err := New(parts[0], self, false)
	if err != nil {
		fmt.Println("error:", err)
		os.Exit(1)
	}
	spec, err := oci.Build(oci.SpecOptions{ID: parts[1], Rootfs: parts[2], CgroupParent: parts[3],
		Args: []string{"/bin/sh", "-c", "while true; do echo alive; sleep 0.05; done"}})
	if err != nil {
		fmt.Println("error:", err)
		os.Exit(1)
	}
	task, err := d.Create(context.Background(), execdriver.CreateOptions{ID: parts[1], Spec: spec})
	if err == nil {
		err = task.Start()
	}
	if err != nil {
		fmt.Println("error:", err)
		os.Exit(1)
	}
	fmt.Println("ready")
	select {}
}

func TestRealDaemonKill9(t *testing.T) {
	needDriver(t)
	execRoot, _ := os.MkdirTemp(testBase, "exec")
	id := "daemondeath"
	cmd := exec.Command("/proc/self/exe")
	cmd.Env = append(os.Environ(), "NATIVE_TEST_DAEMON="+strings.Join([]string{execRoot, id, testRootfs, testCgroupParent}, ","))
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, _ := bufio.NewReader(out).ReadString('\n')
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	if line != "ready\n" {
		t.Fatalf("fake daemon said %q", line)
	}
	self, _ := os.Executable()
	d, err := New(execRoot, self, false)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Delete(id)
	task, err := d.Restore(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	var got syncBuf
	done := make(chan error, 1)
	go func() { done <- task.Attach(context.Background(), execdriver.Streams{Stdout: &got}) }()
	waitFor(t, "output", func() bool { return strings.Contains(got.String(), "alive") })
	if err := task.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if st := waitExit(t, task); st.Code != 137 {
		t.Fatalf("status %+v", st)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
