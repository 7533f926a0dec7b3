package delayflush

import (
	"bytes"
	"sync"
	"testing"
	"time"
)

type syncBuf struct {
	mu     sync.Mutex
	b      bytes.Buffer
	writes int
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.writes++
	return s.b.Write(p)
}

func (s *syncBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestBatchesAndFlushesLate(t *testing.T) {
	var out syncBuf
	flushes := 0
	w := New(&out, 1<<16, 20*time.Millisecond, func() { flushes++ })
	for i := 0; i < 1000; i++ {
		w.Write([]byte("line\n"))
	}
	if out.String() != "" {
		t.Fatal("flushed before the delay")
	}
	deadline := time.Now().Add(time.Second)
	for out.String() == "" && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if len(out.String()) != 5000 || out.writes != 1 {
		t.Fatalf("got %d bytes in %d writes", len(out.String()), out.writes)
	}
	w.Write([]byte("tail"))
	w.Close()
	if len(out.String()) != 5004 {
		t.Fatal("Close did not flush")
	}
	if _, err := w.Write([]byte("x")); err == nil {
		t.Fatal("write after Close accepted")
	}
	if flushes < 2 {
		t.Fatalf("after ran %d times", flushes)
	}
}
