package shim

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func openLog(t *testing.T, path string) *os.File {
	t.Helper()
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

func size(path string) int64 {
	st, err := os.Stat(path)
	if err != nil {
		return 0
	}
	return st.Size()
}

// The log rotates at its bound: shim.log and shim.log.1 each stay under
// it, the newest lines are in shim.log, and the descriptor (fd 2 in the
// shim) follows to the new file.
func TestRotatingLogBound(t *testing.T) {
	path := filepath.Join(t.TempDir(), "shim.log")
	f := openLog(t, path)
	l := &rotatingLog{path: path, f: f, max: 4096}
	for i := 0; i < 1000; i++ {
		fmt.Fprintf(l, "line %04d %s\n", i, strings.Repeat("z", 90))
	}
	cur, old := size(path), size(path+".1")
	if cur == 0 || cur > 4096 || old == 0 || old > 4096 {
		t.Fatalf("shim.log %d bytes, shim.log.1 %d bytes; bound 4096 each", cur, old)
	}
	b, _ := os.ReadFile(path)
	if !strings.Contains(string(b), "line 0999") {
		t.Fatalf("newest line not in shim.log: %q", b)
	}
	f.WriteString("straight to the descriptor\n")
	if b, _ := os.ReadFile(path); !strings.HasSuffix(string(b), "straight to the descriptor\n") {
		t.Fatal("the descriptor did not follow the rotation")
	}
}

// If the file cannot be rotated it is emptied: the bound holds.
func TestRotatingLogTruncatesWhenRenameFails(t *testing.T) {
	dir := t.TempDir()
	f := openLog(t, filepath.Join(dir, "shim.log"))
	l := &rotatingLog{path: filepath.Join(dir, "gone", "shim.log"), f: f, max: 4096}
	for i := 0; i < 1000; i++ {
		fmt.Fprintf(l, "line %04d %s\n", i, strings.Repeat("z", 90))
	}
	if n := size(filepath.Join(dir, "shim.log")); n == 0 || n > 4096 {
		t.Fatalf("shim.log %d bytes, bound 4096", n)
	}
}

// A message repeated 800 times a second (a chatty container's log writes
// failing on a full disk) is written once per interval, with the count of
// those held back; other messages are not held back by it.
func TestRepeatLimiter(t *testing.T) {
	var buf bytes.Buffer
	text := slog.NewTextHandler(&buf, nil)
	lim := newRepeatLimiter(10*time.Second, text)
	h := &limitHandler{Handler: text, lim: lim}
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	const perSecond, seconds = 800, 60
	for i := 0; i < perSecond*seconds; i++ {
		at := start.Add(time.Duration(i) * time.Second / perSecond)
		r := slog.NewRecord(at, slog.LevelWarn, "shim: log write failed", 0)
		r.AddAttrs(slog.String("err", "no space left on device"))
		if err := h.Handle(context.Background(), r); err != nil {
			t.Fatal(err)
		}
		if i%(perSecond*20) == 0 { // something else, now and then
			_ = h.Handle(context.Background(), slog.NewRecord(at, slog.LevelInfo, "other", 0))
		}
	}
	lim.flush()
	out := buf.String()
	written := strings.Count(out, "log write failed") - strings.Count(out, "last_written") // flush's are counts only
	if written < seconds/10 || written > seconds/10+1 || !strings.Contains(out, "last_written") {
		t.Fatalf("%d of %d repeats written in %ds; want one per 10s:\n%s", written, perSecond*seconds, seconds, out)
	}
	if n := strings.Count(out, "msg=other"); n != 3 {
		t.Fatalf("other message written %d times, want 3:\n%s", n, out)
	}
	// Every repeat is accounted for: written, or counted as suppressed.
	total := written
	for _, f := range strings.Fields(out) {
		var n int
		if _, err := fmt.Sscanf(f, "suppressed=%d", &n); err == nil {
			total += n
		}
	}
	if total != perSecond*seconds {
		t.Fatalf("written plus suppressed = %d, want %d:\n%s", total, perSecond*seconds, out)
	}
	t.Logf("%d repeats in %ds: %d lines, %d bytes", perSecond*seconds, seconds, strings.Count(out, "\n"), len(out))
}

type failingWriter struct{ fail bool }

func (w *failingWriter) Write(p []byte) (int, error) {
	if w.fail {
		return 0, syscall.ENOSPC
	}
	return len(p), nil
}

func (w *failingWriter) Dropped() uint64 { return 7 }

// A stream's failing log writes are reported once (within an interval),
// and their end with how many failed.
func TestLogFailures(t *testing.T) {
	var buf bytes.Buffer
	text := slog.NewTextHandler(&buf, nil)
	old := slog.Default()
	slog.SetDefault(slog.New(&limitHandler{Handler: text, lim: newRepeatLimiter(time.Hour, text)}))
	defer slog.SetDefault(old)

	lw := &failingWriter{fail: true}
	f := &logFailures{stream: "stdout", logw: lw}
	for i := 0; i < 1000; i++ {
		f.write(lw, []byte("x\n"))
	}
	lw.fail = false
	f.write(lw, []byte("x\n"))
	f.write(lw, []byte("x\n"))
	out := buf.String()
	if strings.Count(out, "\n") != 2 || !strings.Contains(out, `msg="shim: log write failed" stream=stdout err="no space left on device" dropped_entries=7`) ||
		!strings.Contains(out, `msg="shim: log writes work again" stream=stdout failed_writes=1000 dropped_entries=7`) {
		t.Fatalf("shim log:\n%s", out)
	}
	if n, ok := dropped(struct{}{}); n != 0 || ok {
		t.Fatal("a driver without a count has one")
	}
}
