package journald

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
)

// readAll runs a non-following Read and returns "stream:line" strings.
func readAll(t *testing.T, id string, opts ReadOptions) []string {
	t.Helper()
	var got []string
	closed := make(chan struct{})
	close(closed)
	err := Read(context.Background(), id, opts, closed, func(m Message) error {
		if m.Time.IsZero() || time.Since(m.Time) > time.Minute {
			t.Errorf("bad time %v", m.Time)
		}
		got = append(got, m.Stream+":"+string(m.Line))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return got
}

func equal(t *testing.T, what string, got, want []string) {
	t.Helper()
	if fmt.Sprintf("%q", got) != fmt.Sprintf("%q", want) {
		t.Errorf("%s:\n got  %q\n want %q", what, got, want)
	}
}

func TestReadBack(t *testing.T) {
	needJournald(t)
	id := newID(t)
	l := mustNew(t, Container{ID: id, Name: "r"}, nil)
	out, errw := l.StreamWriter("stdout"), l.StreamWriter("stderr")
	write(t, out, "one\n")
	write(t, errw, "two\n")
	write(t, out, "bin\xff\x01\x02\n")
	write(t, out, "tab\there\n")
	write(t, errw, "part")
	errw.Close()
	entries(t, id, 5) // wait until journald stored them all

	all := []string{"stdout:one\n", "stderr:two\n", "stdout:bin\xff\x01\x02\n", "stdout:tab\there\n", "stderr:part"}
	equal(t, "all", readAll(t, id, ReadOptions{Tail: -1}), all)
	equal(t, "tail 2", readAll(t, id, ReadOptions{Tail: 2}), all[3:])
	equal(t, "tail 0", readAll(t, id, ReadOptions{Tail: 0}), nil)
	equal(t, "other container", readAll(t, newID(t), ReadOptions{Tail: -1}), nil)
}

func TestReadSinceUntil(t *testing.T) {
	needJournald(t)
	id := newID(t)
	l := mustNew(t, Container{ID: id, Name: "s"}, nil)
	w := l.StreamWriter("stdout")
	write(t, w, "a\n")
	entries(t, id, 1)
	time.Sleep(100 * time.Millisecond)
	mid := time.Now()
	time.Sleep(100 * time.Millisecond)
	write(t, w, "b\n")
	entries(t, id, 2)

	// Both bounds fall within one second: journalctl's whole-second bounds
	// include both entries, the exact filter must not.
	equal(t, "since", readAll(t, id, ReadOptions{Tail: -1, Since: mid}), []string{"stdout:b\n"})
	equal(t, "until", readAll(t, id, ReadOptions{Tail: -1, Until: mid}), []string{"stdout:a\n"})
	equal(t, "since+tail", readAll(t, id, ReadOptions{Tail: 1, Since: mid.Add(-time.Hour)}), []string{"stdout:b\n"})
	equal(t, "since+tail 5", readAll(t, id, ReadOptions{Tail: 5, Since: mid}), []string{"stdout:b\n"})
	equal(t, "until+tail", readAll(t, id, ReadOptions{Tail: 1, Until: mid}), []string{"stdout:a\n"})
	equal(t, "until+tail 0", readAll(t, id, ReadOptions{Tail: 0, Until: time.Now()}), nil)
	equal(t, "until+tail 5", readAll(t, id, ReadOptions{Tail: 5, Until: time.Now()}), []string{"stdout:a\n", "stdout:b\n"})
}

// collector gathers messages from a following Read.
type collector struct {
	mu  sync.Mutex
	got []string
}

func (c *collector) add(m Message) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.got = append(c.got, m.Stream+":"+string(m.Line))
	return nil
}

func (c *collector) waitFor(t *testing.T, n int) []string {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		c.mu.Lock()
		if len(c.got) >= n {
			got := append([]string(nil), c.got...)
			c.mu.Unlock()
			return got
		}
		c.mu.Unlock()
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	t.Fatalf("follow delivered %q, want %d messages", c.got, n)
	return nil
}

func TestFollow(t *testing.T) {
	needJournald(t)
	id := newID(t)
	l := mustNew(t, Container{ID: id, Name: "f"}, nil)
	w, ew := l.StreamWriter("stdout"), l.StreamWriter("stderr")
	write(t, w, "old1\n")
	write(t, w, "old2\n")
	entries(t, id, 2)

	done := make(chan struct{})
	var c collector
	res := make(chan error, 1)
	go func() { res <- Read(context.Background(), id, ReadOptions{Follow: true, Tail: 1}, done, c.add) }()
	equal(t, "tail", c.waitFor(t, 1), []string{"stdout:old2\n"})
	write(t, w, "new1\n")
	write(t, ew, "new2\n")
	c.waitFor(t, 3)
	// Written just before the container "exits": the drain must catch it.
	write(t, w, "last\n")
	close(done)
	select {
	case err := <-res:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(3 * time.Second):
		t.Fatal("follow did not end after done was closed")
	}
	equal(t, "followed", c.got, []string{"stdout:old2\n", "stdout:new1\n", "stderr:new2\n", "stdout:last\n"})
}

func TestFollowCancelAndUntil(t *testing.T) {
	needJournald(t)
	id := newID(t)
	l := mustNew(t, Container{ID: id, Name: "c"}, nil)
	write(t, l.StreamWriter("stdout"), "x\n")
	entries(t, id, 1)

	ctx, cancel := context.WithCancel(context.Background())
	var c collector
	res := make(chan error, 1)
	go func() { res <- Read(ctx, id, ReadOptions{Follow: true, Tail: -1}, make(chan struct{}), c.add) }()
	c.waitFor(t, 1)
	start := time.Now()
	cancel()
	if err := <-res; err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > time.Second {
		t.Fatalf("cancel took %v", d)
	}

	// A follow with Until ends by itself at Until.
	var c2 collector
	start = time.Now()
	err := Read(context.Background(), id, ReadOptions{Follow: true, Tail: -1, Until: start.Add(300 * time.Millisecond)}, make(chan struct{}), c2.add)
	if err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("until took %v", d)
	}
	equal(t, "until", c2.got, []string{"stdout:x\n"})

	// An error from fn ends the read and is returned.
	stop := fmt.Errorf("enough")
	err = Read(context.Background(), id, ReadOptions{Follow: true, Tail: -1}, make(chan struct{}), func(Message) error { return stop })
	if err != stop {
		t.Fatalf("got %v, want %v", err, stop)
	}
	if strings.Contains(fmt.Sprint(err), "killed") {
		t.Fatal(err)
	}
}
