package main

import (
	"bufio"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// proc is what the memory figures need to know about one process.
type proc struct {
	pid, ppid int
	comm      string
	argv      []string
}

func listProcs() []proc {
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	out := make([]proc, 0, len(dirs))
	for _, d := range dirs {
		pid, err := strconv.Atoi(filepath.Base(d))
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(d + "/stat")
		if err != nil {
			continue
		}
		// comm is in parentheses and may hold spaces; ppid follows it.
		s := string(stat)
		l, r := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
		if l < 0 || r < l {
			continue
		}
		f := strings.Fields(s[r+1:])
		if len(f) < 2 {
			continue
		}
		ppid, _ := strconv.Atoi(f[1])
		cmdline, _ := os.ReadFile(d + "/cmdline")
		argv := strings.Split(strings.TrimRight(string(cmdline), "\x00"), "\x00")
		out = append(out, proc{pid: pid, ppid: ppid, comm: s[l+1 : r], argv: argv})
	}
	return out
}

// rssKiB is VmRSS from /proc/PID/status (resident anon + file + shmem),
// 0 for a process that is gone or a kernel thread.
func rssKiB(pid int) int64 { return procField(pid, "status", "VmRSS:") }

// pssKiB is the proportional set size (smaps_rollup Pss): shared pages,
// such as the text of one binary run as many shims, count once in total.
func pssKiB(pid int) int64 { return procField(pid, "smaps_rollup", "Pss:") }

func procField(pid int, file, field string) int64 {
	f, err := os.Open("/proc/" + strconv.Itoa(pid) + "/" + file)
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), field); ok {
			n, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return n
		}
	}
	return 0
}

// memSample is one reading of an engine's memory.
type memSample struct {
	DaemonKiB  int64 `json:"daemon_kib"`
	HelperKiB  int64 `json:"helpers_kib"`
	HelperPSS  int64 `json:"helpers_pss_kib"`
	Helpers    int   `json:"helpers"`
	DaemonPIDs []int `json:"daemon_pids"`
}

// daemonPIDs are the engine's long-lived processes: our dockerd; Docker's
// dockerd and the containerd it manages; Podman's API service (its CLI
// itself keeps nothing running).
func (e *Engine) daemonPIDs(ps []proc) []int {
	pid := e.daemonPID()
	if pid == 0 {
		return nil
	}
	pids := []int{pid}
	if e.Name == "docker" {
		for _, p := range ps {
			if p.ppid == pid && p.comm == "containerd" {
				pids = append(pids, p.pid)
			}
		}
	}
	return pids
}

// isHelper says whether p is one of this engine's per-container helpers:
// our `docker-shim __shim`, Docker's containerd-shim-runc-v2, Podman's conmon,
// recognised by the private directories on their command lines.
func (e *Engine) isHelper(p proc) bool {
	line := strings.Join(p.argv, " ")
	mine := strings.Contains(line, e.RunDir) || strings.Contains(line, e.BaseDir)
	if !mine {
		return false
	}
	switch e.Name {
	case "ours":
		return len(p.argv) > 1 && p.argv[1] == "__shim"
	case "docker", "containerd":
		return strings.HasPrefix(p.comm, "containerd-shim")
	case "podman":
		return p.comm == "conmon"
	}
	return false
}

func (e *Engine) memory() memSample {
	ps := listProcs()
	var m memSample
	m.DaemonPIDs = e.daemonPIDs(ps)
	for _, pid := range m.DaemonPIDs {
		m.DaemonKiB += rssKiB(pid)
	}
	for _, p := range ps {
		if e.isHelper(p) {
			m.Helpers++
			m.HelperKiB += rssKiB(p.pid)
			m.HelperPSS += pssKiB(p.pid)
		}
	}
	return m
}

// helperPIDs lists the helpers still alive, for the final clean-up.
func (e *Engine) helperPIDs() []int {
	var out []int
	for _, p := range listProcs() {
		if e.isHelper(p) {
			out = append(out, p.pid)
		}
	}
	return out
}

// dnsPIDs are Podman's aardvark-dns servers for our private networks
// (netavark ends them with the network's last container; a crash may not).
func (e *Engine) dnsPIDs() []int {
	var out []int
	for _, p := range listProcs() {
		line := strings.Join(p.argv, " ")
		if p.comm == "aardvark-dns" && (strings.Contains(line, e.RunDir) || strings.Contains(line, e.BaseDir)) {
			out = append(out, p.pid)
		}
	}
	return out
}
