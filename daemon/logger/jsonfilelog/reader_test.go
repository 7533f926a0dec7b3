package jsonfilelog

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// writeN writes lines "line i" with timestamps t0+i seconds.
func writeN(t testing.TB, w *Writer, from, to int) {
	t.Helper()
	for i := from; i < to; i++ {
		if err := w.WriteMessage("stdout", fmt.Appendf(nil, "line %d\n", i), t0.Add(time.Duration(i)*time.Second)); err != nil {
			t.Fatal(err)
		}
	}
}

func collect(t *testing.T, path string, opts ReadOptions) []string {
	t.Helper()
	var out []string
	err := Read(context.Background(), path, opts, nil, func(m Message) error {
		out = append(out, string(m.Line))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func lines(from, to int) []string {
	var out []string
	for i := from; i < to; i++ {
		out = append(out, fmt.Sprintf("line %d\n", i))
	}
	return out
}

func eq(a, b []string) bool { return strings.Join(a, "") == strings.Join(b, "") && len(a) == len(b) }

func TestReadAcrossRotationsAndTail(t *testing.T) {
	p := filepath.Join(t.TempDir(), "l")
	w, _ := New(p, map[string]string{"max-size": "2k", "max-file": "100"})
	writeN(t, w, 0, 300)
	w.Close()
	if _, err := os.Stat(p + ".3"); err != nil {
		t.Fatal("expected several rotations")
	}
	if got := collect(t, p, ReadOptions{Tail: -1}); !eq(got, lines(0, 300)) {
		t.Fatalf("all: got %d lines, first %q", len(got), got[:1])
	}
	// Tails crossing file boundaries, and larger than the whole log.
	for _, n := range []int{0, 1, 5, 30, 31, 100, 299, 300, 1000} {
		want := lines(max(0, 300-n), 300)
		if got := collect(t, p, ReadOptions{Tail: n}); !eq(got, want) {
			t.Fatalf("tail %d: got %d lines", n, len(got))
		}
	}
}

func TestSinceUntil(t *testing.T) {
	p := filepath.Join(t.TempDir(), "l")
	w, _ := New(p, nil)
	writeN(t, w, 0, 100)
	w.Close()
	got := collect(t, p, ReadOptions{Tail: -1, Since: t0.Add(10 * time.Second), Until: t0.Add(19 * time.Second)})
	if !eq(got, lines(10, 20)) {
		t.Fatalf("got %q", got)
	}
	if got := collect(t, p, ReadOptions{Tail: 5, Since: t0.Add(97 * time.Second)}); !eq(got, lines(97, 100)) {
		t.Fatalf("tail+since: got %q", got)
	}
}

func TestReadMissingFile(t *testing.T) {
	if got := collect(t, filepath.Join(t.TempDir(), "none"), ReadOptions{Tail: -1}); len(got) != 0 {
		t.Fatal(got)
	}
}

func TestTornLastLine(t *testing.T) {
	p := filepath.Join(t.TempDir(), "l")
	w, _ := New(p, nil)
	writeN(t, w, 0, 3)
	w.Close()
	full, _ := os.ReadFile(p)
	cut := bytes.LastIndexByte(full[:len(full)-1], '\n') + 10
	os.WriteFile(p, full[:cut], 0o640)

	if got := collect(t, p, ReadOptions{Tail: -1}); !eq(got, lines(0, 2)) {
		t.Fatalf("torn: got %q", got)
	}
	if got := collect(t, p, ReadOptions{Tail: 1}); !eq(got, lines(1, 2)) {
		t.Fatalf("torn tail: got %q", got)
	}

	// Following, the torn line is delivered once the writer completes it.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	done := make(chan struct{})
	got, errc := follow(ctx, p, -1, done)
	for _, want := range lines(0, 2) {
		if g := <-got; g != want {
			t.Fatalf("got %q want %q", g, want)
		}
	}
	time.Sleep(150 * time.Millisecond)
	f, _ := os.OpenFile(p, os.O_WRONLY|os.O_APPEND, 0)
	f.Write(full[cut:])
	f.Close()
	if g := <-got; g != "line 2\n" {
		t.Fatalf("completed line: %q", g)
	}
	close(done)
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
}

// A follower must see every line, in order, while a writer rotates the log
// underneath it, and return once done is closed.
func TestFollowConcurrentWriter(t *testing.T) {
	p := filepath.Join(t.TempDir(), "l")
	w, _ := New(p, map[string]string{"max-size": "8k", "max-file": "50"})
	writeN(t, w, 0, 10)

	const total = 3000
	done := make(chan struct{})
	started := make(chan struct{})
	go func() {
		defer close(done)
		<-started // so that Tail sees exactly the first 10 lines
		for i := 10; i < total; i += 50 {
			writeN(t, w, i, min(i+50, total))
			time.Sleep(time.Millisecond)
		}
		w.Close()
	}()
	var got []string
	err := Read(context.Background(), p, ReadOptions{Follow: true, Tail: 5}, done, func(m Message) error {
		if len(got) == 0 {
			close(started)
		}
		got = append(got, string(m.Line))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if !eq(got, lines(5, total)) {
		t.Fatalf("got %d lines, want %d; first %q last %q", len(got), total-5, got[0], got[len(got)-1])
	}
}

func TestFollowWaitsForCreationAndCancel(t *testing.T) {
	p := filepath.Join(t.TempDir(), "l")
	ctx, cancel := context.WithCancel(context.Background())
	got, errc := follow(ctx, p, 0, nil)
	time.Sleep(100 * time.Millisecond)
	w, _ := New(p, nil)
	defer w.Close()
	writeN(t, w, 0, 1)
	select {
	case g := <-got:
		if g != "line 0\n" {
			t.Fatal(g)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("follower never saw the new file")
	}
	start := time.Now()
	cancel()
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > time.Second {
		t.Fatalf("cancel took %v", d)
	}
}

func TestCallbackErrorStops(t *testing.T) {
	p := filepath.Join(t.TempDir(), "l")
	w, _ := New(p, nil)
	writeN(t, w, 0, 10)
	w.Close()
	boom := errors.New("boom")
	n := 0
	err := Read(context.Background(), p, ReadOptions{Tail: -1, Follow: true}, nil, func(Message) error {
		n++
		if n == 3 {
			return boom
		}
		return nil
	})
	if !errors.Is(err, boom) || n != 3 {
		t.Fatalf("err %v after %d", err, n)
	}
}

// makeBigLog writes size bytes of log quickly by repeating encoded entries.
func makeBigLog(t testing.TB, path string, size int) int {
	t.Helper()
	var block []byte
	n := 0
	for i := 0; len(block) < 1<<20; i++ {
		block = appendEntry(block, "stdout", fmt.Appendf(nil, "a moderately long line of output number %d\n", i), t0)
		n++
	}
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	total := 0
	for written := 0; written < size; written += len(block) {
		f.Write(block)
		total += n
	}
	return total
}

func TestTailLargeFileIsFast(t *testing.T) {
	p := filepath.Join(t.TempDir(), "l")
	makeBigLog(t, p, 100<<20)
	w, _ := New(p, nil)
	writeN(t, w, 0, 10)
	w.Close()
	start := time.Now()
	got := collect(t, p, ReadOptions{Tail: 10})
	d := time.Since(start)
	if !eq(got, lines(0, 10)) {
		t.Fatalf("got %q", got)
	}
	// Parsing 100 MB takes seconds; seeking from the end takes microseconds.
	if d > 100*time.Millisecond {
		t.Fatalf("tail of 10 lines took %v", d)
	}
}

func BenchmarkRead(b *testing.B) {
	p := filepath.Join(b.TempDir(), "l")
	makeBigLog(b, p, 8<<20)
	b.SetBytes(8 << 20)
	for b.Loop() {
		err := Read(context.Background(), p, ReadOptions{Tail: -1}, nil, func(Message) error { return nil })
		if err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkTail(b *testing.B) {
	p := filepath.Join(b.TempDir(), "l")
	makeBigLog(b, p, 64<<20)
	for b.Loop() {
		err := Read(context.Background(), p, ReadOptions{Tail: 100}, nil, func(Message) error { return nil })
		if err != nil {
			b.Fatal(err)
		}
	}
}

// follow reads the log at p in follow mode in the background, sending each
// line on got; the returned channel carries Read's result.
func follow(ctx context.Context, p string, tail int, done <-chan struct{}) (got chan string, errc chan error) {
	got = make(chan string, 10)
	errc = make(chan error, 1)
	go func() {
		errc <- Read(ctx, p, ReadOptions{Follow: true, Tail: tail}, done, func(m Message) error {
			got <- string(m.Line)
			return nil
		})
	}()
	return got, errc
}
