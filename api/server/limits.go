package server

import (
	"time"

	"github.com/sdengine/engine/api/server/router"
)

// Limits bound what one client can make the daemon hold: memory for a
// request body. None of them limits how long a response may take to write:
// `logs -f`, attach, exec and wait stream for as long as they last.
type Limits struct {
	// Body is the most a route of each class may read from a request
	// body; 0 is no limit.
	Body map[router.BodyClass]int64
	// BodyStall fails a read of a limited body that brings nothing new for
	// this long (a client that sends headers, then trickles or stops).
	BodyStall time.Duration
}

// DefaultLimits are the limits of a daemon.
//
//   - Bodies. A container or exec configuration (create, update, exec
//     create) may be 4 MiB: the command and environment it carries cannot
//     exceed the kernel's ARG_MAX (2 MiB with the usual 8 MiB stack), and
//     twice that leaves room for JSON escaping, labels and mounts; real
//     configurations are a few KiB. Every other route takes no body or a
//     small JSON object (exec start, options): 1 MiB, which leaves a
//     thousandfold margin and keeps a form body (ParseForm reads up to
//     10 MB) from being read whole. Streams (import, load, build context,
//     archive PUT) are not limited. A body that declares a larger size is
//     refused before a byte of it is read; one sent chunked when the limit
//     is crossed.
//   - A limited body must make progress every 30 s.
func DefaultLimits() Limits {
	return Limits{
		Body: map[router.BodyClass]int64{
			router.BodySmall:  1 << 20,
			router.BodyConfig: 4 << 20,
			router.BodyStream: 0,
		},
		BodyStall: 30 * time.Second,
	}
}
