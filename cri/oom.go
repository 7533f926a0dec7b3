package cri

import (
	"bufio"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"sync"
)

// capSysResource is CAP_SYS_RESOURCE's bit in /proc/<pid>/status.
const capSysResource = 24

// oomFloor is the lowest oom_score_adj a container can be given, or false
// when there is none: the kernel refuses an oom_score_adj below the one
// the process inherited unless it has CAP_SYS_RESOURCE, and a container's
// init inherits the daemon's. A daemon without that capability (a node
// that is itself a container) would fail every Guaranteed pod, to which
// the kubelet gives -997; containerd's restrict_oom_score_adj clamps
// instead, as this does, without a setting.
var oomFloor = sync.OnceValues(func() (int, bool) {
	if hasCap(capSysResource) {
		return 0, false
	}
	b, err := os.ReadFile("/proc/self/oom_score_adj")
	if err != nil {
		return 0, false
	}
	own, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		return 0, false
	}
	slog.Info("cri: no CAP_SYS_RESOURCE: containers' oom_score_adj is raised to the daemon's", "oom_score_adj", own)
	return own, true
})

// oomScoreAdj is the oom_score_adj the kubelet asked for, raised to the
// floor when there is one.
func oomScoreAdj(requested int64) int {
	floor, ok := oomFloor()
	return clampOOMScoreAdj(int(requested), floor, ok)
}

func clampOOMScoreAdj(requested, floor int, hasFloor bool) int {
	if hasFloor && requested < floor {
		return floor
	}
	return requested
}

// hasCap says whether this process has capability bit in its effective set.
func hasCap(bit uint) bool {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return true // assume it has: then nothing is changed
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "CapEff:"); ok {
			caps, err := strconv.ParseUint(strings.TrimSpace(v), 16, 64)
			if err != nil {
				return true
			}
			return caps&(1<<bit) != 0
		}
	}
	return true
}
