//go:build integration

package integrationcli

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The systemd profile leaves a user's mount alone and nothing else: each
// case boots systemd to `running`.
func TestSystemdUserMountsWin(t *testing.T) {
	needSystemdImage(t)
	cleanup := needHostJournal(t)
	defer cleanup()
	for _, tc := range []struct {
		name string
		args func(dir string) []string
		// check runs in the booted container.
		check func(t *testing.T, id, dir string)
	}{
		// The user's /run is searchable by all, as a /run tmpfs is: from a
		// 0700 one (t.TempDir under umask 077), dbus-daemon, which runs as
		// messagebus, cannot reach /run/systemd/notify; its READY=1 never
		// comes and the boot waits on dbus.service and logind for good
		// (docs/systemd.md).
		{"run", func(dir string) []string { mustChmod(t, dir, 0o755); return []string{"-v", dir + ":/run"} }, func(t *testing.T, id, dir string) {
			// systemd wrote into the user's /run, and still got its
			// /run/lock tmpfs.
			if _, err := os.Stat(filepath.Join(dir, "systemd")); err != nil {
				t.Errorf("systemd did not use the user's /run: %v", err)
			}
			if fs := fsType(t, id, "/run/lock"); fs != "tmpfs" {
				t.Errorf("/run/lock is %q, want the profile's tmpfs", fs)
			}
		}},
		{"run-lock", func(dir string) []string { return []string{"--tmpfs", "/run/lock:size=1m"} }, func(t *testing.T, id, dir string) {
			if opts := mountOpts(t, id, "/run/lock"); !strings.Contains(opts, "size=1024k") {
				t.Errorf("/run/lock options %q, want the user's size=1m", opts)
			}
		}},
		{"tmp", func(dir string) []string { return []string{"-v", dir + ":/tmp"} }, func(t *testing.T, id, dir string) {
			shared.MustCLI(t, "exec", id, "touch", "/tmp/from-container")
			if _, err := os.Stat(filepath.Join(dir, "from-container")); err != nil {
				t.Errorf("/tmp is not the user's bind: %v", err)
			}
		}},
		{"journal", func(dir string) []string { return []string{"-v", dir + ":/var/log/journal"} }, func(t *testing.T, id, dir string) {
			// journald writes into the user's directory; the engine made
			// no host directory of its own.
			waitFile(t, filepath.Join(dir, id[:32], "system.journal"))
			if _, err := os.Stat(filepath.Join("/var/log/journal", id[:32])); !os.IsNotExist(err) {
				t.Errorf("the engine shared a host journal directory over the user's: %v", err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			args := append(append([]string{"run", "-d", "--init=systemd"}, tc.args(dir)...), systemdImage)
			id := remember(shared.MustCLI(t, args...))
			defer shared.CLI("rm", "-f", id)
			waitBooted(t, id)
			tc.check(t, id, dir)
		})
	}

	// A user's bind at /sys/fs/cgroup replaces the engine's view whole
	// (the user takes the host's tree: here read-only, so systemd could
	// not boot; a listing is enough to see whose mount it is).
	out := shared.MustCLI(t, "run", "--rm", "--init=systemd", "-v", "/sys/fs/cgroup:/sys/fs/cgroup:ro",
		systemdImage, "sh", "-c", "ls /sys/fs/cgroup/pids/; grep ' /sys/fs/cgroup ' /proc/self/mountinfo")
	if !strings.Contains(out, "docker") || !strings.Contains(out, " /sys/fs/cgroup ro,") {
		t.Errorf("/sys/fs/cgroup is not the user's read-only bind of the host's tree:\n%s", out)
	}
}

// A container_uuid given by the user is the one machine ID: in
// /etc/machine-id, the host's journal directory and machined's
// registration (a real systemd-machined on a private system bus).
func TestSystemdContainerUUIDIsTheMachineID(t *testing.T) {
	cleanup := needHostJournal(t)
	defer cleanup()
	// A machine ID of this run: it names a host directory
	// (/var/log/journal/<id>) that a suite beside this one must not share.
	uuid, mid := randomUUID(t)
	scope := fmt.Sprintf("it-uuid-%d.scope", os.Getpid())

	d := NewDaemon(t, "--exec-opt", "native.cgroupdriver=cgroupfs")
	startInMachinedNS(t, d)
	defer removeCgroupDirs(t, "machine.slice/"+scope, "machine.slice")
	defer d.Cleanup(t)
	out, err := exec.Command(repoRoot + "/hack/images/systemd.sh").Output()
	if err != nil {
		t.Fatalf("systemd image: %v", err)
	}
	d.MustCLI(t, "import", "-c", `CMD ["/sbin/init"]`, strings.TrimSpace(string(out)), "sd")

	// A container_uuid systemd would not take is refused, nothing made.
	r := d.Stock("run", "-d", "-e", "container_uuid=not-a-uuid", "sd")
	if r.Code != 125 || !strings.Contains(r.Stderr, "container_uuid") {
		t.Errorf("bad container_uuid: %s", r)
	}
	if ps := d.MustCLI(t, "ps", "-aq"); ps != "" {
		t.Errorf("a container was created for a bad container_uuid: %s", ps)
	}

	id := remember(mustStock(t, d, "run", "-d", "--name", "uuid", "-e", "container_uuid="+uuid,
		"--cgroup-parent", "machine.slice/"+scope, "sd"))
	defer os.RemoveAll(filepath.Join("/var/log/journal", mid))
	waitBootedOn(t, d.CLI, id, nil)
	if got := d.MustCLI(t, "exec", id, "cat", "/etc/machine-id"); got != mid {
		t.Errorf("/etc/machine-id %q, want %s", got, mid)
	}
	waitFile(t, filepath.Join("/var/log/journal", mid, "system.journal"))
	if _, err := os.Stat(filepath.Join("/var/log/journal", id[:32])); !os.IsNotExist(err) {
		t.Errorf("a journal directory named after the container ID exists too: %v", err)
	}
	waitMachine(t, d, "uuid", true)
	show, err := machinectlIn(d, "show", "uuid", "-p", "Id")
	if err != nil || strings.TrimSpace(show) != "Id="+mid {
		t.Errorf("machinectl show: %q, %v; want Id=%s", show, err, mid)
	}
	d.MustCLI(t, "rm", "-f", id)
	waitMachine(t, d, "uuid", false)
	if _, err := os.Stat(filepath.Join("/var/log/journal", mid)); !os.IsNotExist(err) {
		t.Errorf("journal directory left after rm: %v", err)
	}
}

func mustChmod(t *testing.T, path string, mode os.FileMode) {
	t.Helper()
	if err := os.Chmod(path, mode); err != nil {
		t.Fatal(err)
	}
}

// randomUUID is a random (version 4) UUID and the machine ID it makes.
func randomUUID(t *testing.T) (uuid, mid string) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatal(err)
	}
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	mid = hex.EncodeToString(b[:])
	return mid[:8] + "-" + mid[8:12] + "-" + mid[12:16] + "-" + mid[16:20] + "-" + mid[20:], mid
}

// needHostJournal makes /var/log/journal for the test when the host keeps
// no persistent journal; the returned function undoes it. Suites side by
// side share the directory: each holds a shared lock on journal-users
// while it needs it, and the last one to leave removes a directory that a
// test made (journal-made says so; a host's own journal stays). The
// journal lock orders the checks.
func needHostJournal(t *testing.T) func() {
	t.Helper()
	const dir = "/var/log/journal"
	made := filepath.Join(claimDir, "journal-made")
	mu := lockOrFatal(t, "journal", syscall.LOCK_EX)
	defer unlockClose(mu)
	users := lockOrFatal(t, "journal-users", syscall.LOCK_SH)
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		if err := os.MkdirAll(dir, 0o2755); err != nil {
			unlockClose(users)
			t.Fatal(err)
		}
		if err := os.WriteFile(made, nil, 0o644); err != nil {
			unlockClose(users)
			t.Fatal(err)
		}
	}
	return func() {
		mu := lockOrFatal(t, "journal", syscall.LOCK_EX)
		defer unlockClose(mu)
		// Another user holds journal-users shared: it stays for them.
		syscall.Flock(int(users.Fd()), syscall.LOCK_UN)
		last := syscall.Flock(int(users.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) == nil
		unlockClose(users)
		if _, err := os.Stat(made); last && err == nil {
			if err := os.Remove(dir); err == nil || os.IsNotExist(err) {
				os.Remove(made)
			}
		}
	}
}

// lockOrFatal opens the lock file name in claimDir and flocks it (how:
// LOCK_EX or LOCK_SH, waiting).
func lockOrFatal(t *testing.T, name string, how int) *os.File {
	t.Helper()
	f, err := lockFile(name)
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Flock(int(f.Fd()), how); err != nil {
		f.Close()
		t.Fatalf("lock %s: %v", name, err)
	}
	return f
}

func unlockClose(f *os.File) {
	syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
	f.Close()
}

func waitFile(t *testing.T, path string) {
	t.Helper()
	for i := 0; i < 100; i++ {
		if _, err := os.Stat(path); err == nil {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Errorf("%s did not appear within 10 s", path)
}

// mountEntry returns the mountinfo line of the mount at dst in the container.
func mountEntry(t *testing.T, id, dst string) []string {
	t.Helper()
	out := shared.MustCLI(t, "exec", id, "cat", "/proc/self/mountinfo")
	var found []string
	for _, l := range strings.Split(out, "\n") {
		if f := strings.Fields(l); len(f) > 4 && f[4] == dst {
			found = f // the last one is on top
		}
	}
	if found == nil {
		t.Fatalf("nothing mounted at %s:\n%s", dst, out)
	}
	return found
}

func fsType(t *testing.T, id, dst string) string {
	f := mountEntry(t, id, dst)
	for i, x := range f {
		if x == "-" && i+1 < len(f) {
			return f[i+1]
		}
	}
	return ""
}

func mountOpts(t *testing.T, id, dst string) string {
	f := mountEntry(t, id, dst)
	return strings.Join(f[5:], " ")
}
