package shim

import (
	"context"
	"io"
	"log/slog"
	"os"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// The shim's own log, shim.log in its state directory, lives on the exec
// root: normally a tmpfs, that is RAM, one per container. It is bounded
// twice over. Repeated messages are rate-limited: a message (by level and
// text) is written at most once per logRepeatInterval, the next one that
// gets through says how many were held back ("suppressed"), and the shim
// writes the counts still pending when it ends. And the file is rotated
// by size: once shim.log would pass shimLogMax it becomes shim.log.1
// (replacing the previous one) and a new shim.log begins, so a shim's log
// never takes more than twice shimLogMax.
const (
	shimLogMax        = 256 << 10
	logRepeatInterval = 10 * time.Second
)

// setupLog makes the shim's default logger write to stderr, which the exec
// driver opened on path (the group's shim.log), rate-limited and rotated.
// It returns the limiter, to be flushed before the shim exits.
func setupLog(path string) *repeatLimiter {
	text := slog.NewTextHandler(&rotatingLog{path: path, f: os.Stderr, max: shimLogMax}, nil)
	lim := newRepeatLimiter(logRepeatInterval, text)
	slog.SetDefault(slog.New(&limitHandler{Handler: text, lim: lim}))
	return lim
}

// containerLog is the shim.log of one container of the group, in the
// container's state directory: what the shim does for that container is
// logged there, bounded as the group's own log is.
type containerLog struct {
	*slog.Logger
	lim *repeatLimiter
	f   *os.File
}

// openContainerLog opens the container's shim.log. If it cannot be
// opened, the container's records go to the group's log, with its id.
func openContainerLog(path, id string) *containerLog {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		slog.Warn("shim: opening the container's log; using the group's", "id", id, "err", err)
		return &containerLog{Logger: slog.Default().With("id", id)}
	}
	text := slog.NewTextHandler(&rotatingLog{path: path, f: f, max: shimLogMax}, nil)
	lim := newRepeatLimiter(logRepeatInterval, text)
	return &containerLog{Logger: slog.New(&limitHandler{Handler: text, lim: lim}), lim: lim, f: f}
}

// close writes the pending repeat counts and closes the file.
func (l *containerLog) close() {
	if l.lim != nil {
		l.lim.flush()
	}
	if l.f != nil {
		l.f.Close()
	}
}

// rotatingLog appends to f, the file at path, rotating it at max bytes.
// f keeps its descriptor across rotations (the new file is dup'ed onto
// it): for the shim that is fd 2, so whatever else writes to stderr (a
// panic, a library) follows, and its bytes count too (the size is the
// file's, not what went through here).
type rotatingLog struct {
	mu   sync.Mutex
	path string
	f    *os.File
	max  int64
}

func (l *rotatingLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if st, err := l.f.Stat(); err == nil && st.Size() > 0 && st.Size()+int64(len(p)) > l.max {
		l.rotate()
	}
	return l.f.Write(p)
}

// rotate moves the file to path.1 and puts a new one under f. If that
// cannot be done the file is emptied instead: the bound holds either way.
func (l *rotatingLog) rotate() {
	if err := os.Rename(l.path, l.path+".1"); err == nil {
		nf, err := os.OpenFile(l.path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
		if err == nil {
			err = unix.Dup3(int(nf.Fd()), int(l.f.Fd()), 0)
			nf.Close()
			if err == nil {
				return
			}
		}
	}
	_ = l.f.Truncate(0)
}

// repeatLimiter decides which records get through: per level and message,
// one per interval.
type repeatLimiter struct {
	mu       sync.Mutex
	interval time.Duration
	seen     map[repeatKey]*repeats
	out      slog.Handler // where flush writes the pending counts
}

type repeatKey struct {
	level slog.Level
	msg   string
}

type repeats struct {
	last       time.Time // when one last got through
	suppressed int       // held back since
}

func newRepeatLimiter(interval time.Duration, out slog.Handler) *repeatLimiter {
	return &repeatLimiter{interval: interval, seen: map[repeatKey]*repeats{}, out: out}
}

// admit reports whether a record may be written, and how many like it were
// held back since the last one that was.
func (l *repeatLimiter) admit(level slog.Level, msg string, t time.Time) (bool, int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	k := repeatKey{level, msg}
	r := l.seen[k]
	if r == nil {
		l.seen[k] = &repeats{last: t}
		return true, 0
	}
	if t.Sub(r.last) < l.interval {
		r.suppressed++
		return false, 0
	}
	n := r.suppressed
	r.last, r.suppressed = t, 0
	return true, n
}

// flush writes a record for each message with suppressed repeats.
func (l *repeatLimiter) flush() {
	l.mu.Lock()
	defer l.mu.Unlock()
	for k, r := range l.seen {
		if r.suppressed == 0 {
			continue
		}
		rec := slog.NewRecord(time.Now(), k.level, k.msg, 0)
		rec.AddAttrs(slog.Int("suppressed", r.suppressed), slog.Time("last_written", r.last))
		_ = l.out.Handle(context.Background(), rec)
		r.suppressed = 0
	}
}

// limitHandler is a slog.Handler that lets records through lim.
type limitHandler struct {
	slog.Handler
	lim *repeatLimiter
}

func (h *limitHandler) Handle(ctx context.Context, r slog.Record) error {
	ok, suppressed := h.lim.admit(r.Level, r.Message, r.Time)
	if !ok {
		return nil
	}
	if suppressed > 0 {
		r = r.Clone()
		r.AddAttrs(slog.Int("suppressed", suppressed))
	}
	return h.Handler.Handle(ctx, r)
}

func (h *limitHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return &limitHandler{Handler: h.Handler.WithAttrs(attrs), lim: h.lim}
}

func (h *limitHandler) WithGroup(name string) slog.Handler {
	return &limitHandler{Handler: h.Handler.WithGroup(name), lim: h.lim}
}

// logFailures follows the writes of one stream to the container's log:
// each failure is logged (the limiter lets one through per interval), and
// the first success after failures says how many there were.
type logFailures struct {
	stream string
	logw   any          // the container's logger, for its count of dropped entries
	log    *slog.Logger // the container's shim.log; nil: the default
	failed int
}

func (f *logFailures) logger() *slog.Logger {
	if f.log != nil {
		return f.log
	}
	return slog.Default()
}

// write writes p to lw and reports on the outcome.
func (f *logFailures) write(lw io.Writer, p []byte) {
	if _, err := lw.Write(p); err != nil {
		f.failed++
		f.logger().Warn("shim: log write failed", append([]any{"stream", f.stream, "err", err}, droppedAttr(f.logw)...)...)
		return
	}
	if f.failed > 0 {
		f.logger().Info("shim: log writes work again", append([]any{"stream", f.stream, "failed_writes", f.failed}, droppedAttr(f.logw)...)...)
		f.failed = 0
	}
}

// dropped is the log driver's count of entries it could not write, for
// drivers that keep one (json-file, local).
func dropped(logw any) (uint64, bool) {
	if d, ok := logw.(interface{ Dropped() uint64 }); ok {
		return d.Dropped(), true
	}
	return 0, false
}

// droppedAttr is dropped as log attributes (none if there is no count).
func droppedAttr(logw any) []any {
	if n, ok := dropped(logw); ok {
		return []any{"dropped_entries", n}
	}
	return nil
}
