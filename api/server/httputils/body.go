package httputils

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"runtime/debug"
	"strconv"
	"sync"
	"time"
)

// BodyTooLargeError is a request body longer than its route allows: 413.
type BodyTooLargeError struct {
	Method, Path string
	Limit        int64
}

func (e *BodyTooLargeError) Error() string {
	return fmt.Sprintf("request body is too large: %s %s takes at most %s", e.Method, e.Path, sizeText(e.Limit))
}

// BodyTimeoutError is a request body that stopped arriving: 408.
type BodyTimeoutError struct {
	Method, Path string
	After        time.Duration
}

func (e *BodyTimeoutError) Error() string {
	return fmt.Sprintf("request body timed out: %s %s sent nothing for %s", e.Method, e.Path, e.After)
}

func sizeText(n int64) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}

// statusOf is the status for err when its kind is known here, else 0.
func statusOf(err error) int {
	var tl *BodyTooLargeError
	var to *BodyTimeoutError
	switch {
	case errors.As(err, &tl):
		return http.StatusRequestEntityTooLarge
	case errors.As(err, &to):
		return http.StatusRequestTimeout
	}
	return 0
}

// Body is a request body bounded by LimitBody.
type Body struct{ b *limitedBody }

// Done is called when the handler has returned. If the body turned out
// too large after it had been read up to its limit, what the handler
// buffered of it is garbage now: the memory goes back to the system at
// once instead of after the next collections (a 100 MB chunked body to a
// 4 MiB route would otherwise leave the daemon's RSS some 15 MB higher
// for minutes). At most once a second: the releases asked for meanwhile
// are one, done when the second is over.
func (b Body) Done() {
	if b.b == nil || !b.b.over {
		return
	}
	release.Lock()
	defer release.Unlock()
	if release.pending {
		return
	}
	release.pending = true
	time.AfterFunc(time.Second-time.Since(release.last), func() {
		debug.FreeOSMemory()
		release.Lock()
		release.pending, release.last = false, time.Now()
		release.Unlock()
	})
}

var release struct {
	sync.Mutex
	pending bool
	last    time.Time
}

// LimitBody bounds what the handler can read of r's body: a body that
// declares more than limit bytes is refused at once (the error is
// returned and nothing is read); one that turns out longer fails the
// read that crosses the limit, with a *BodyTooLargeError. A limit of 0 or
// less means no limit.
//
// With stall > 0, each read of the body must make progress within stall
// or it fails with a *BodyTimeoutError. The connection's read deadline
// this sets is cleared when the body was read to its end, so that it
// never outlives a complete body; after an error it stays, so that the
// server's own reading of what is left does not wait either.
func LimitBody(w http.ResponseWriter, r *http.Request, limit int64, stall time.Duration) (Body, error) {
	if limit > 0 && r.ContentLength > limit {
		return Body{}, &BodyTooLargeError{Method: r.Method, Path: r.URL.Path, Limit: limit}
	}
	if r.Body == nil || r.Body == http.NoBody || (limit <= 0 && stall <= 0) {
		return Body{}, nil
	}
	b := &limitedBody{
		rc: r.Body, limit: limit, left: limit, stall: stall,
		ctl: http.NewResponseController(w), method: r.Method, path: r.URL.Path,
	}
	r.Body = b
	return Body{b}, nil
}

type limitedBody struct {
	rc           io.ReadCloser
	limit, left  int64
	stall        time.Duration
	ctl          *http.ResponseController
	armed        bool
	err          error // sticky: too large or timed out
	over         bool  // read up to the limit and found too large
	method, path string
}

func (b *limitedBody) Read(p []byte) (int, error) {
	if b.err != nil {
		return 0, b.err
	}
	if len(p) == 0 {
		return 0, nil
	}
	// Ask for one byte more than may be read: getting it proves the body
	// too large without reading further.
	if b.limit > 0 && int64(len(p)) > b.left+1 {
		p = p[:b.left+1]
	}
	if b.stall > 0 {
		// Errors only when the writer is not a real connection (tests).
		_ = b.ctl.SetReadDeadline(time.Now().Add(b.stall))
		b.armed = true
	}
	n, err := b.rc.Read(p)
	if b.limit > 0 && int64(n) > b.left {
		n, err = int(b.left), &BodyTooLargeError{Method: b.method, Path: b.path, Limit: b.limit}
		b.over = true
	}
	if b.limit > 0 {
		b.left -= int64(n)
	}
	switch {
	case err == io.EOF:
		// The body ended: the server's own reader takes the connection
		// over (it watches for the client going away) and must not
		// inherit the deadline.
		if b.armed {
			_ = b.ctl.SetReadDeadline(time.Time{})
			b.armed = false
		}
	case err != nil:
		// The deadline stays: the server reads what is left of a
		// body before it answers, and that must not wait either.
		if errors.Is(err, os.ErrDeadlineExceeded) {
			err = &BodyTimeoutError{Method: b.method, Path: b.path, After: b.stall}
		}
		b.err = err
	}
	return n, err
}

func (b *limitedBody) Close() error { return b.rc.Close() }

// lingerTime is how long a refused body's connection is drained after the
// answer, as net/http itself waits (its rstAvoidanceDelay).
const lingerTime = 500 * time.Millisecond

// refuseAndLinger answers a refused body (err, with its status) on a
// request that asked to close the connection afterwards. net/http then
// closes at once, with the client's body still arriving: the client's
// next write fails, and a client that sees that before the answer (Go's,
// with keep-alives off) reports "broken pipe" instead of the 413. (With
// keep-alive, net/http half-closes and waits itself.) So the answer is
// sent, the connection half-closed and drained for a moment, then closed.
func refuseAndLinger(w http.ResponseWriter, status int, err error) {
	b, _ := json.Marshal(map[string]string{"message": err.Error()})
	b = append(b, '\n')
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(b)))
	w.Header().Set("Connection", "close")
	w.WriteHeader(status)
	_, _ = w.Write(b)
	rc := http.NewResponseController(w)
	if rc.Flush() != nil {
		return
	}
	conn, _, herr := rc.Hijack()
	if herr != nil {
		return
	}
	defer conn.Close()
	if cw, ok := conn.(interface{ CloseWrite() error }); ok {
		_ = cw.CloseWrite()
	}
	_ = conn.SetReadDeadline(time.Now().Add(lingerTime))
	_, _ = io.Copy(io.Discard, conn)
}
