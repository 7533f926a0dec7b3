// Package crilog is the "cri" log driver: container output in the format
// the kubelet reads (k8s.io/kubernetes/pkg/kubelet/kuberuntime/logs), one
// record per line:
//
//	<RFC3339Nano time> <stdout|stderr> <F|P> <content>\n
//
// F ends a line: the reader adds the newline back. P is a piece of a line
// that goes on in the next record of the same stream: a line longer than
// 16 KiB is cut into P pieces and ends with an F record, and output that
// ended without a newline is a P record. The kubelet rotates the file by
// renaming it and asking for a reopen (Writer.Reopen), so the driver never
// rotates by itself.
package crilog

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sdengine/engine/pkg/errdefs"
)

// MaxContent is the most content one record carries: containerd's and
// CRI-O's default line size, which the kubelet's readers are used to.
const MaxContent = 16 * 1024

// Tags of a record: a full line, or a piece of one.
const (
	tagFull    = 'F'
	tagPartial = 'P'
)

// fileMode is the log file's: the kubelet (root) reads it, and a log
// collector in the group may; others not.
const fileMode = 0o640

// dirMode is that of the directories made above the file when missing:
// the kubelet makes the pod's log directory 0755 itself.
const dirMode = 0o755

// Path returns the file that opts name, after checking them: "path" is
// required and absolute, and no other option is known.
func Path(opts map[string]string) (string, error) {
	for k := range opts {
		if k != "path" {
			return "", errdefs.InvalidParameter(fmt.Errorf("unknown log opt '%s' for cri log driver", k))
		}
	}
	p, ok := opts["path"]
	if !ok || p == "" {
		return "", errdefs.InvalidParameter(errors.New("cri log driver: log opt 'path' is required (the absolute path of the log file)"))
	}
	if !filepath.IsAbs(p) {
		return "", errdefs.InvalidParameter(fmt.Errorf("cri log driver: log opt 'path' must be absolute, not %q", p))
	}
	return filepath.Clean(p), nil
}

// ValidateOptions checks --log-opt values without opening anything, so the
// API can reject a bad container config at create time.
func ValidateOptions(opts map[string]string) error {
	_, err := Path(opts)
	return err
}

// Writer appends records to the log file. It is safe for concurrent use:
// the stdout and stderr copiers share one Writer, and Reopen comes from
// the control socket.
type Writer struct {
	path string

	mu sync.Mutex // guards f; held across each write and the swap of Reopen
	f  *os.File

	dropped atomic.Uint64
}

// New opens (appending to) or creates the file that opts name, making its
// directory if missing.
func New(opts map[string]string) (*Writer, error) {
	p, err := Path(opts)
	if err != nil {
		return nil, err
	}
	f, err := openFile(p)
	if err != nil {
		return nil, err
	}
	return &Writer{path: p, f: f}, nil
}

func openFile(p string) (*os.File, error) {
	if err := os.MkdirAll(filepath.Dir(p), dirMode); err != nil {
		return nil, fmt.Errorf("cri log: create directory: %w", err)
	}
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_APPEND|os.O_CREATE, fileMode)
	if err != nil {
		return nil, fmt.Errorf("cri log: %w", err)
	}
	return f, nil
}

// Reopen makes later records go to a new file at the path: the kubelet
// renamed the old one away. The swap happens under the lock that every
// write holds, so each record lands whole in exactly one of the two
// files; if the open fails, writing goes on to the old file and the error
// is returned. A closed Writer (the container exited) reopens nothing.
func (w *Writer) Reopen() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.f == nil {
		return errdefs.Conflict(errors.New("cri log: the log is closed: the container's output ended"))
	}
	nf, err := openFile(w.path)
	if err != nil {
		return err
	}
	old := w.f
	w.f = nf
	if err := old.Close(); err != nil {
		return fmt.Errorf("cri log: closing the old file: %w", err)
	}
	return nil
}

// write appends buf, which holds n whole records, in one write(2): with
// O_APPEND a reader never sees records of two writers interleaved.
func (w *Writer) write(buf []byte, n int) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.f == nil {
		w.dropped.Add(uint64(n))
		return errors.New("cri log: write after close")
	}
	if _, err := w.f.Write(buf); err != nil {
		w.dropped.Add(uint64(n))
		return fmt.Errorf("cri log: %w", err)
	}
	return nil
}

// Dropped counts the records that could not be written.
func (w *Writer) Dropped() uint64 { return w.dropped.Load() }

// Close closes the file; the stream writers must be closed first.
func (w *Writer) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.f == nil {
		return nil
	}
	err := w.f.Close()
	w.f = nil
	return err
}

// StreamWriter returns a writer that turns the byte stream of "stdout" or
// "stderr" into records; closing it writes an unterminated last line as a
// P record.
func (w *Writer) StreamWriter(stream string) io.WriteCloser {
	return &streamWriter{w: w, stream: stream}
}

type streamWriter struct {
	mu      sync.Mutex
	w       *Writer
	stream  string
	pending []byte // the unterminated tail, not yet a record
	buf     []byte // the records of the current write
	n       int    // how many records buf holds
}

// appendRecord adds one record to s.buf; content holds no newline.
func (s *streamWriter) appendRecord(t time.Time, tag byte, content []byte) {
	s.buf = t.AppendFormat(s.buf, time.RFC3339Nano)
	s.buf = append(s.buf, ' ')
	s.buf = append(s.buf, s.stream...)
	s.buf = append(s.buf, ' ', tag, ' ')
	s.buf = append(s.buf, content...)
	s.buf = append(s.buf, '\n')
	s.n++
}

// line adds the records of one whole line (without its newline): P pieces
// of MaxContent while more than that is left, then F.
func (s *streamWriter) line(t time.Time, content []byte) {
	for len(content) > MaxContent {
		s.appendRecord(t, tagPartial, content[:MaxContent])
		content = content[MaxContent:]
	}
	s.appendRecord(t, tagFull, content)
}

func (s *streamWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	// UTC throughout, so that the times of one file compare as text too.
	now := time.Now().UTC()
	s.buf, s.n = s.buf[:0], 0
	rest := p
	for len(rest) > 0 {
		i := bytes.IndexByte(rest, '\n')
		if i < 0 {
			break
		}
		if len(s.pending) > 0 {
			s.pending = append(s.pending, rest[:i]...)
			s.line(now, s.pending)
			s.pending = s.pending[:0]
		} else {
			s.line(now, rest[:i])
		}
		rest = rest[i+1:]
	}
	s.pending = append(s.pending, rest...)
	// A piece is cut off only once more is known to follow it, so that a
	// line of exactly MaxContent still is one F record.
	for len(s.pending) > MaxContent {
		s.appendRecord(now, tagPartial, s.pending[:MaxContent])
		s.pending = append(s.pending[:0], s.pending[MaxContent:]...)
	}
	if s.n == 0 {
		return len(p), nil
	}
	if err := s.w.write(s.buf, s.n); err != nil {
		return 0, err
	}
	return len(p), nil
}

// Close writes the unterminated tail, if any, as a P record: the output
// ended without a newline. It does not close the shared Writer.
func (s *streamWriter) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.pending) == 0 {
		return nil
	}
	s.buf, s.n = s.buf[:0], 0
	s.appendRecord(time.Now().UTC(), tagPartial, s.pending)
	s.pending = s.pending[:0]
	return s.w.write(s.buf, s.n)
}
