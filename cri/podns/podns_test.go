package podns

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"golang.org/x/sys/unix"
)

func nsInode(t *testing.T, path string) uint64 {
	t.Helper()
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		t.Fatal(err)
	}
	return st.Ino
}

func TestPinAndRelease(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatal("podns needs root to unshare and mount")
	}
	dir := filepath.Join(t.TempDir(), "ns")
	ns, err := Pin(dir, Options{Net: true, IPC: true, UTS: true, Hostname: "pod-a"})
	if err != nil {
		t.Fatal(err)
	}
	for name, p := range map[string]string{"net": ns.Net, "ipc": ns.IPC, "uts": ns.UTS} {
		var fs unix.Statfs_t
		if err := unix.Statfs(p, &fs); err != nil {
			t.Fatal(err)
		}
		if fs.Type != unix.NSFS_MAGIC {
			t.Errorf("%s: %s is not a namespace file (fs type %#x)", name, p, fs.Type)
		}
		if nsInode(t, p) == nsInode(t, "/proc/self/ns/"+name) {
			t.Errorf("%s: pinned namespace is the host's (%d)", name, nsInode(t, p))
		}
	}

	// The UTS namespace carries the pod's host name.
	got := make(chan string, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread changed namespace
		f, err := os.Open(ns.UTS)
		if err != nil {
			got <- err.Error()
			return
		}
		defer f.Close()
		if err := unix.Setns(int(f.Fd()), unix.CLONE_NEWUTS); err != nil {
			got <- err.Error()
			return
		}
		var u unix.Utsname
		_ = unix.Uname(&u)
		got <- unix.ByteSliceToString(u.Nodename[:])
	}()
	if h := <-got; h != "pod-a" {
		t.Errorf("host name in the pod's UTS namespace = %q, want pod-a", h)
	}

	if err := Release(dir); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("Release left %s: %v", dir, err)
	}
	if err := Release(dir); err != nil {
		t.Errorf("second Release: %v", err)
	}
}

func TestPinNothingForHostNamespaces(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ns")
	ns, err := Pin(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if *ns != (Namespaces{}) {
		t.Errorf("Pin with no namespaces = %+v", *ns)
	}
}
