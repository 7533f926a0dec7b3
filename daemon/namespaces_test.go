package daemon

import (
	"bufio"
	"os"
	"strconv"
	"strings"
	"testing"

	containertypes "github.com/docker/docker/api/types/container"
	"golang.org/x/sys/unix"

	"github.com/sdengine/engine/container"
	"github.com/sdengine/engine/internal/testenv"
	"github.com/sdengine/engine/pkg/errdefs"
)

func TestValidateNamespaceModes(t *testing.T) {
	for _, tc := range []struct {
		hostname, domainname string
		hc                   containertypes.HostConfig
		msg                  string
	}{
		{hc: containertypes.HostConfig{}},
		{hc: containertypes.HostConfig{IpcMode: "none"}},
		{hc: containertypes.HostConfig{IpcMode: "shareable", UTSMode: "host", ShmSize: 1 << 20}},
		{hc: containertypes.HostConfig{IpcMode: "container:x"}}, // x need not exist yet
		{hc: containertypes.HostConfig{IpcMode: "bogus"}, msg: "invalid IPC mode: bogus"},
		{hc: containertypes.HostConfig{IpcMode: "container:"}, msg: "invalid IPC mode: container:: no container named"},
		{hc: containertypes.HostConfig{UTSMode: "private"}, msg: "invalid UTS mode: private"},
		{hostname: "h", hc: containertypes.HostConfig{UTSMode: "host"}, msg: "conflicting options: hostname and the UTS mode"},
		{domainname: "example.com", hc: containertypes.HostConfig{UTSMode: "host"}, msg: "conflicting options: domainname and the UTS mode"},
		{domainname: "example.com", hc: containertypes.HostConfig{}},
		{hc: containertypes.HostConfig{ShmSize: -1}, msg: "invalid ShmSize -1: SHM size can not be less than 0"},
	} {
		err := validateNamespaceModes(&containertypes.Config{Hostname: tc.hostname, Domainname: tc.domainname}, &tc.hc)
		if tc.msg == "" {
			if err != nil {
				t.Errorf("%+v: %v", tc.hc, err)
			}
			continue
		}
		if err == nil || err.Error() != tc.msg || !errdefs.IsInvalidParameter(err) {
			t.Errorf("%+v: got %v; want 400 %q", tc.hc, err, tc.msg)
		}
	}
}

// mounted reports whether p is a mount point in this mount namespace.
func mounted(t *testing.T, p string) bool {
	t.Helper()
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if fields := strings.Fields(s.Text()); len(fields) > 4 && fields[4] == p {
			return true
		}
	}
	return false
}

func TestShareableShmMount(t *testing.T) {
	testenv.RequireRoot(t)
	root := t.TempDir()
	t.Cleanup(func() { _ = unmountShm(root) })
	p, err := mountShm(root, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	if !mounted(t, p) || !isMountPoint(p) {
		t.Fatalf("%s not mounted", p)
	}
	var st unix.Statfs_t
	if err := unix.Statfs(p, &st); err != nil {
		t.Fatal(err)
	}
	if st.Type != unix.TMPFS_MAGIC || st.Blocks*uint64(st.Bsize) != 1<<20 {
		t.Errorf("type %x, size %d", st.Type, st.Blocks*uint64(st.Bsize))
	}
	for _, f := range []int64{unix.ST_NOSUID, unix.ST_NODEV, unix.ST_NOEXEC} {
		if st.Flags&f == 0 {
			t.Errorf("flags %#x lack %#x", st.Flags, f)
		}
	}
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode()&(os.ModePerm|os.ModeSticky) != os.ModeSticky|0o777 {
		t.Errorf("mode %v", fi.Mode())
	}
	// A second start replaces the mount rather than stacking one more.
	if _, err := mountShm(root, 1<<20); err != nil {
		t.Fatal(err)
	}
	if err := unmountShm(root); err != nil {
		t.Fatal(err)
	}
	if mounted(t, p) || isMountPoint(p) {
		t.Errorf("%s still mounted", p)
	}
	// Nothing mounted, or no directory at all: nothing to do.
	if err := unmountShm(root); err != nil {
		t.Error(err)
	}
	if err := unmountShm(t.TempDir()); err != nil {
		t.Error(err)
	}
}

func TestJoinNamespacesOfStoppedContainer(t *testing.T) {
	d := daemonWithOther(t)
	self := container.New(d.containers.Root(), "fedcba9876543210fedcba9876543210fedcba9876543210fedcba9876543210", "/self")
	self.HostConfig = &containertypes.HostConfig{}
	other, err := d.containers.Get("other")
	if err != nil {
		t.Fatal(err)
	}
	other.HostConfig = &containertypes.HostConfig{IpcMode: "shareable"}

	_, err = d.pidNamespaceOf(self, "other")
	if err == nil || err.Error() != "failed to join PID namespace: container "+other.ID+" is not running" || errdefs.ClassOf(err) != errdefs.ClassUnknown {
		t.Errorf("pid: %v (%v)", err, errdefs.ClassOf(err))
	}
	if _, err := d.pidNamespaceOf(self, "nosuch"); !errdefs.IsInvalidParameter(err) {
		t.Errorf("pid of a missing container: %v", err)
	}
	if _, _, err := d.ipcOf(self, "other"); err == nil || !strings.Contains(err.Error(), "is not running") {
		t.Errorf("ipc: %v", err)
	}

	other.State.SetRunning(os.Getpid())
	other.HostConfig.IpcMode = "private"
	if _, _, err := d.ipcOf(self, "other"); err == nil || !strings.Contains(err.Error(), "non-shareable IPC") || !errdefs.IsInvalidParameter(err) {
		t.Errorf("ipc of a private container: %v", err)
	}
	// Shareable but its /dev/shm is not mounted: refused, never a bind of
	// an empty directory.
	other.HostConfig.IpcMode = "shareable"
	if _, _, err := d.ipcOf(self, "other"); err == nil || !strings.Contains(err.Error(), "is not mounted") {
		t.Errorf("ipc of a shareable container without its /dev/shm: %v", err)
	}
	other.HostConfig.IpcMode = "host"
	share, shm, err := d.ipcOf(self, "other")
	if err != nil || !share.Host || shm != "/dev/shm" {
		t.Errorf("ipc of a host-IPC container: %+v %q %v", share, shm, err)
	}
	if p, err := d.pidNamespaceOf(self, "other"); err != nil || p != "/proc/"+strconv.Itoa(os.Getpid())+"/ns/pid" {
		t.Errorf("pid of a running container: %q %v", p, err)
	}
	// Oneself, directly or through a chain.
	if _, err := d.pidNamespaceOf(self, self.ID); err == nil {
		t.Error("joined its own PID namespace")
	}
	if err := d.containers.Add(self); err != nil {
		t.Fatal(err)
	}
	self.State.SetRunning(os.Getpid())
	other.HostConfig.IpcMode = containertypes.IpcMode("container:" + self.ID)
	if _, _, err := d.ipcOf(self, "other"); err == nil {
		t.Error("a chain back to the container itself was followed")
	}
}
