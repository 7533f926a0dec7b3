// Package delayflush buffers a stream of small writes and flushes it at
// most a fixed delay after the first unflushed byte: a follower still sees
// each line promptly, while a bulk copy goes out in large writes instead
// of one system call per line.
package delayflush

import (
	"bufio"
	"io"
	"sync"
	"time"
)

// Writer is safe for concurrent use.
type Writer struct {
	mu     sync.Mutex
	bw     *bufio.Writer
	after  func()
	delay  time.Duration
	timer  *time.Timer
	err    error
	closed bool
}

// New wraps w with a buffer of size bytes. after, if not nil, runs after
// every flush (e.g. http.Flusher.Flush).
func New(w io.Writer, size int, delay time.Duration, after func()) *Writer {
	return &Writer{bw: bufio.NewWriterSize(w, size), after: after, delay: delay}
}

// Write buffers p and arms the flush timer.
func (f *Writer) Write(p []byte) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err != nil {
		return 0, f.err
	}
	if f.closed {
		return 0, io.ErrClosedPipe
	}
	n, err := f.bw.Write(p)
	if err != nil {
		f.err = err
		return n, err
	}
	if f.timer == nil && f.bw.Buffered() > 0 {
		f.timer = time.AfterFunc(f.delay, func() { _ = f.Flush() })
	}
	return n, nil
}

// Flush writes out what is buffered now.
func (f *Writer) Flush() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.flushLocked()
}

func (f *Writer) flushLocked() error {
	if f.timer != nil {
		f.timer.Stop()
		f.timer = nil
	}
	if f.err != nil || f.closed {
		return f.err
	}
	if err := f.bw.Flush(); err != nil {
		f.err = err
		return err
	}
	if f.after != nil {
		f.after()
	}
	return nil
}

// Close flushes and stops: a timer that fires later does nothing, so the
// underlying writer may go away once Close returns.
func (f *Writer) Close() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	err := f.flushLocked()
	f.closed = true
	return err
}
