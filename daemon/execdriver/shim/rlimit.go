package shim

import (
	"log/slog"

	"github.com/opencontainers/runc/libcontainer/configs"
	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"
)

var rlimitTypes = map[string]int{
	"RLIMIT_CPU":        unix.RLIMIT_CPU,
	"RLIMIT_FSIZE":      unix.RLIMIT_FSIZE,
	"RLIMIT_DATA":       unix.RLIMIT_DATA,
	"RLIMIT_STACK":      unix.RLIMIT_STACK,
	"RLIMIT_CORE":       unix.RLIMIT_CORE,
	"RLIMIT_RSS":        unix.RLIMIT_RSS,
	"RLIMIT_NPROC":      unix.RLIMIT_NPROC,
	"RLIMIT_NOFILE":     unix.RLIMIT_NOFILE,
	"RLIMIT_MEMLOCK":    unix.RLIMIT_MEMLOCK,
	"RLIMIT_AS":         unix.RLIMIT_AS,
	"RLIMIT_LOCKS":      unix.RLIMIT_LOCKS,
	"RLIMIT_SIGPENDING": unix.RLIMIT_SIGPENDING,
	"RLIMIT_MSGQUEUE":   unix.RLIMIT_MSGQUEUE,
	"RLIMIT_NICE":       unix.RLIMIT_NICE,
	"RLIMIT_RTPRIO":     unix.RLIMIT_RTPRIO,
	"RLIMIT_RTTIME":     unix.RLIMIT_RTTIME,
}

// clampRlimits converts the spec's rlimits, lowering any hard limit above
// our own: raising it needs CAP_SYS_RESOURCE, which we may not have, and
// the whole start would fail with EPERM.
func clampRlimits(in []specs.POSIXRlimit) []configs.Rlimit {
	var out []configs.Rlimit
	for _, rl := range in {
		typ, ok := rlimitTypes[rl.Type]
		if !ok {
			slog.Warn("ignoring unknown rlimit", "type", rl.Type)
			continue
		}
		hard, soft := rl.Hard, rl.Soft
		var cur unix.Rlimit
		if err := unix.Getrlimit(typ, &cur); err == nil && hard > cur.Max {
			hard = cur.Max
		}
		soft = min(soft, hard)
		out = append(out, configs.Rlimit{Type: typ, Hard: hard, Soft: soft})
	}
	return out
}
