package server

import (
	"log/slog"
	"os"
	"strconv"
	"time"

	"github.com/sdengine/engine/api/server/router"
)

// Limits bound what one client can make the daemon hold: memory for a
// request body, a connection and its goroutine for a client that sends
// nothing. None of them limits how long a response may take to write:
// `logs -f`, attach, exec and wait stream for as long as they last.
type Limits struct {
	// Body is the most a route of each class may read from a request
	// body; 0 is no limit.
	Body map[router.BodyClass]int64
	// BodyStall fails a read of a limited body that brings nothing new for
	// this long (a client that sends headers, then trickles or stops).
	BodyStall time.Duration
	// ReadHeaderTimeout is how long a client has to send a request's
	// headers, from the connection's accept (or, on a kept-alive
	// connection, from the request's first byte).
	ReadHeaderTimeout time.Duration
	// IdleTimeout closes a kept-alive connection that sends no new request.
	IdleTimeout time.Duration
	// MaxHeaderBytes bounds a request's headers.
	MaxHeaderBytes int
	// MaxPending caps the connections that have not sent a complete first
	// request header yet; EvictAfter is how old the oldest of them must be
	// to be closed for a new one when the cap is reached (see connGate).
	MaxPending int
	EvictAfter time.Duration
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
//   - Headers within 30 s: a client sends them in one write right after it
//     connects, and 30 s leaves any network and any TLS handshake (it shares
//     the deadline) far behind, while a client that sends nothing is gone
//     half a minute later.
//   - Idle keep-alive connections close after 120 s: longer than Go's
//     client transport keeps an idle connection (90 s), so that the client
//     always closes first and never sends a request on a connection the
//     daemon is closing.
//   - Headers up to 256 KiB (Go's default is 1 MiB): registry credentials,
//     the largest header Docker clients send, are a few KiB. With at most
//     512 connections mid-header that bounds what they can hold to about
//     130 MiB, and a connection that sent nothing costs about 12 KiB (a
//     goroutine and a read buffer).
//   - 512 connections without a complete header: a real client holds one
//     for microseconds, so even a burst of hundreds of parallel clients
//     stays below it. Beyond it, the oldest is closed for a newcomer once
//     it is older than 250 ms (a real client's header is read within
//     milliseconds even on a loaded host), so that a flood of silent
//     connections cannot lock clients out: it gets through at the cap's
//     worth of connections every 250 ms (2048 a second).
func DefaultLimits() Limits {
	return Limits{
		Body: map[router.BodyClass]int64{
			router.BodySmall:  1 << 20,
			router.BodyConfig: 4 << 20,
			router.BodyStream: 0,
		},
		BodyStall:         30 * time.Second,
		ReadHeaderTimeout: 30 * time.Second,
		IdleTimeout:       120 * time.Second,
		MaxHeaderBytes:    256 << 10,
		MaxPending:        512,
		EvictAfter:        250 * time.Millisecond,
	}
}

// Environment knobs for tests, so that they need not wait half a minute
// for a timeout or open 512 connections: not a configuration interface.
const (
	envHeaderTimeout = "SDENGINE_API_HEADER_TIMEOUT" // a duration
	envMaxPending    = "SDENGINE_API_MAX_PENDING"    // a count
)

// limitsFromEnv is DefaultLimits with the test knobs applied.
func limitsFromEnv() Limits {
	l := DefaultLimits()
	if v := os.Getenv(envHeaderTimeout); v != "" {
		if d, err := time.ParseDuration(v); err == nil && d > 0 {
			l.ReadHeaderTimeout = d
			l.BodyStall = d
		} else {
			slog.Warn("ignoring invalid value", "env", envHeaderTimeout, "value", v)
		}
	}
	if v := os.Getenv(envMaxPending); v != "" {
		if n, err := strconv.Atoi(v); err == nil && n > 0 {
			l.MaxPending = n
		} else {
			slog.Warn("ignoring invalid value", "env", envMaxPending, "value", v)
		}
	}
	return l
}
