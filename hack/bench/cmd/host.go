package main

import (
	"bufio"
	"bytes"
	"errors"
	"io/fs"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"

	"golang.org/x/sys/unix"
)

// Host paths the peers write to even when given private roots (Podman's
// registries/policy, containerd's shim sockets, network namespaces, Docker's
// trust key). Whatever of these did not exist before the run is removed.
var watchedPaths = []string{
	"/run/containers", "/var/lib/containers", "/etc/containers",
	"/etc/docker", "/etc/docker/key.json", "/run/containerd",
	"/run/netns", "/var/lib/cni", "/etc/cni", "/run/libpod",
	"/var/run/docker/plugins",
}

var watchedSysctls = []string{
	"/proc/sys/net/ipv4/ip_forward",
	"/proc/sys/net/ipv6/conf/all/forwarding",
	"/proc/sys/net/ipv4/conf/all/route_localnet",
}

// Rules and chains the peers may add carry one of these; only they are
// ever removed, so concurrent firewall work by others on this host is safe.
var iptMarkers = []string{"NETAVARK", "CNI-", "DOCKER", "sdbench", "10.213.", "10.214.", "10.215.", "10.216.", "10.217.", "10.218."}

// cgroup groups the peers create at the top of each hierarchy.
var peerCgroups = []string{"docker", "libpod_parent", "machine.slice"}

type hostState struct {
	existed map[string]bool
	sysctls map[string]string
	ipt     map[string]string // "iptables filter" -> iptables-save output
	cgroups map[string]bool   // cgroup dirs that existed
}

func snapshotHost() *hostState {
	h := &hostState{existed: map[string]bool{}, sysctls: map[string]string{}, ipt: map[string]string{}, cgroups: map[string]bool{}}
	for _, p := range watchedPaths {
		_, err := os.Lstat(p)
		h.existed[p] = err == nil
	}
	for _, p := range watchedSysctls {
		if b, err := os.ReadFile(p); err == nil {
			h.sysctls[p] = strings.TrimSpace(string(b))
		}
	}
	for _, k := range iptKeys() {
		h.ipt[k] = iptSave(k)
	}
	for _, d := range cgroupCandidates() {
		if _, err := os.Stat(d); err == nil {
			h.cgroups[d] = true
		}
	}
	return h
}

// restore undoes what the run changed on the host; every step is best
// effort and logged, so one failure does not leave the rest behind.
func (h *hostState) restore(privateDirs []string) {
	for _, l := range benchBridges() {
		if _, err := os.Stat("/sys/class/net/" + l); err == nil {
			logRun("ip", "link", "del", l)
		}
	}
	deleteOurNftTables()
	for _, k := range iptKeys() {
		before := h.ipt[k]
		after := iptSave(k)
		if before == "" && after == "" {
			continue
		}
		bin, _, _ := strings.Cut(k, " ")
		for _, c := range withBinary(bin, iptUndo(before, after)) {
			logRun(c[0], c[1:]...)
		}
	}
	for p, v := range h.sysctls {
		if b, err := os.ReadFile(p); err == nil && strings.TrimSpace(string(b)) != v {
			slog.Info("restoring sysctl", "path", p, "value", v)
			if err := os.WriteFile(p, []byte(v), 0o644); err != nil {
				slog.Warn("restore sysctl", "path", p, "err", err)
			}
		}
	}
	var gone []string
	for _, p := range watchedPaths {
		if _, err := os.Lstat(p); err == nil && !h.existed[p] {
			gone = append(gone, p)
		}
	}
	gone = append(gone, privateDirs...)
	unmountUnder(gone)
	for _, p := range gone {
		if err := os.RemoveAll(p); err != nil {
			slog.Warn("remove", "path", p, "err", err)
		}
	}
	for _, d := range cgroupCandidates() {
		if !h.cgroups[d] {
			rmdirTree(d)
		}
	}
}

func logRun(name string, args ...string) {
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		slog.Warn("clean-up command failed", "cmd", name+" "+strings.Join(args, " "), "err", err, "out", strings.TrimSpace(string(out)))
	}
}

func iptKeys() []string {
	var keys []string
	for _, bin := range []string{"iptables", "ip6tables"} {
		if _, err := exec.LookPath(bin); err != nil {
			continue
		}
		for _, t := range []string{"filter", "nat"} {
			keys = append(keys, bin+" "+t)
		}
	}
	return keys
}

func iptSave(key string) string {
	bin, table, _ := strings.Cut(key, " ")
	out, err := exec.Command(bin+"-save", "-t", table).Output()
	if err != nil {
		return ""
	}
	return string(out)
}

// iptUndo returns the commands that take after back to before: new rules
// deleted, new chains flushed and removed, built-in policies reset. Only
// lines carrying one of iptMarkers are considered (policies excepted).
func iptUndo(before, after string) [][]string {
	var table string
	seen := map[string]bool{}
	policies := map[string]string{}
	for _, l := range strings.Split(before, "\n") {
		seen[l] = true
		if name, pol, ok := chainLine(l); ok {
			policies[name] = pol
		}
	}
	var dels, chains, pols [][]string
	for _, l := range strings.Split(after, "\n") {
		switch {
		case strings.HasPrefix(l, "*"):
			table = l[1:]
		case strings.HasPrefix(l, ":"):
			name, pol, _ := chainLine(l)
			if old, ok := policies[name]; ok && old != pol && pol != "-" && old != "-" {
				pols = append(pols, []string{"-t", table, "-P", name, old})
			} else if _, ok := policies[name]; !ok && marked(name) {
				chains = append(chains, []string{"-t", table, "-F", name}, []string{"-t", table, "-X", name})
			}
		case strings.HasPrefix(l, "-A ") && !seen[l] && marked(l):
			args := splitRule(l)
			args[0] = "-D"
			dels = append(dels, append([]string{"-t", table}, args...))
		}
	}
	var out [][]string
	for _, group := range [][][]string{dels, chains, pols} {
		out = append(out, group...)
	}
	return out
}

// withBinary prefixes each command with the iptables binary.
func withBinary(bin string, cmds [][]string) [][]string {
	out := make([][]string, len(cmds))
	for i, c := range cmds {
		out[i] = append([]string{bin}, c...)
	}
	return out
}

func chainLine(l string) (name, policy string, ok bool) {
	f := strings.Fields(strings.TrimPrefix(l, ":"))
	if !strings.HasPrefix(l, ":") || len(f) < 2 {
		return "", "", false
	}
	return f[0], f[1], true
}

func marked(s string) bool {
	for _, m := range iptMarkers {
		if strings.Contains(s, m) {
			return true
		}
	}
	return false
}

// splitRule splits an iptables-save rule line into arguments, honouring the
// double quotes iptables-save puts around comments.
func splitRule(l string) []string {
	var args []string
	var cur strings.Builder
	inQuote, have := false, false
	for i := 0; i < len(l); i++ {
		c := l[i]
		switch {
		case c == '\\' && inQuote && i+1 < len(l):
			i++
			cur.WriteByte(l[i])
		case c == '"':
			inQuote, have = !inQuote, true
		case c == ' ' && !inQuote:
			if have {
				args = append(args, cur.String())
				cur.Reset()
				have = false
			}
		default:
			cur.WriteByte(c)
			have = true
		}
	}
	if have {
		args = append(args, cur.String())
	}
	return args
}

// unmountUnder lazily unmounts every mount at or below the given paths,
// deepest first.
func unmountUnder(prefixes []string) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return
	}
	defer f.Close()
	var targets []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 5 {
			continue
		}
		mp := unescapeMount(fields[4])
		for _, p := range prefixes {
			if mp == p || strings.HasPrefix(mp, p+"/") {
				targets = append(targets, mp)
				break
			}
		}
	}
	sort.Slice(targets, func(i, j int) bool { return len(targets[i]) > len(targets[j]) })
	for _, t := range targets {
		if err := unix.Unmount(t, unix.MNT_DETACH); err != nil && !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ENOENT) {
			slog.Warn("unmount", "path", t, "err", err)
		}
	}
}

// unescapeMount decodes mountinfo's octal escapes (\040 for a space...).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b bytes.Buffer
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			v := (s[i+1]-'0')*64 + (s[i+2]-'0')*8 + (s[i+3] - '0')
			b.WriteByte(v)
			i += 3
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

func cgroupCandidates() []string {
	var out []string
	hier, _ := filepath.Glob("/sys/fs/cgroup/*")
	hier = append(hier, "/sys/fs/cgroup")
	for _, h := range hier {
		for _, g := range peerCgroups {
			out = append(out, filepath.Join(h, g))
		}
	}
	return out
}

// rmdirTree removes an (empty of processes) cgroup directory tree, leaves
// first; a group still in use simply stays.
func rmdirTree(root string) {
	var dirs []string
	_ = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			dirs = append(dirs, p)
		}
		return nil
	})
	for i := len(dirs) - 1; i >= 0; i-- {
		_ = unix.Rmdir(dirs[i])
	}
}
