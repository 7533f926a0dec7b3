// Package jsonfilelog stores container output in Docker's json-file format:
// one JSON object per line, {"log":"...","stream":"stdout","time":"..."},
// with size-based rotation (path, path.1, path.2, ...; higher is older).
package jsonfilelog

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/docker/go-units"

	"github.com/sdengine/engine/daemon/logger/linebuf"
	"github.com/sdengine/engine/pkg/errdefs"
)

// Writer appends log entries to a json-file log. It is safe for concurrent
// use: stdout and stderr copiers share one Writer.
type Writer struct {
	mu      sync.Mutex
	path    string
	f       *os.File
	size    int64 // bytes in the current file
	maxSize int64 // 0 = unlimited
	maxFile int
	buf     []byte
	closed  bool
}

// config is the parsed form of the --log-opt options.
type config struct {
	maxSize int64
	maxFile int
}

// Options Docker's json-file driver accepts that only matter to the daemon
// (log attributes) and which we therefore tolerate without acting on.
var ignoredOptions = map[string]bool{
	"labels": true, "labels-regex": true, "env": true, "env-regex": true, "tag": true,
}

// parseOptions reads the options as Docker's json-file driver does, with
// its messages: sizes are go-units' human sizes (10m is 10,000,000 bytes),
// max-size must be positive (without it there is no rotation), max-file
// at least 1, and compress needs rotation. Docker reads them when the
// container starts; the daemon checks them at create (ValidateOptions).
func parseOptions(opts map[string]string) (config, error) {
	cfg := config{maxFile: 1}
	for k := range opts {
		switch k {
		case "max-size", "max-file", "compress":
		default:
			if !ignoredOptions[k] {
				return cfg, errdefs.InvalidParameter(fmt.Errorf("unknown log opt '%s' for json-file log driver", k))
			}
		}
	}
	if v, ok := opts["max-size"]; ok {
		n, err := units.FromHumanSize(v)
		if err != nil {
			return cfg, errdefs.InvalidParameter(err)
		}
		if n <= 0 {
			return cfg, errdefs.InvalidParameter(errors.New("max-size must be a positive number"))
		}
		cfg.maxSize = n
	}
	if v, ok := opts["max-file"]; ok {
		n, err := strconv.Atoi(v)
		if err != nil {
			return cfg, errdefs.InvalidParameter(err)
		}
		if n < 1 {
			return cfg, errdefs.InvalidParameter(errors.New("max-file cannot be less than 1"))
		}
		cfg.maxFile = n
	}
	if v, ok := opts["compress"]; ok {
		compress, err := strconv.ParseBool(v)
		if err != nil {
			return cfg, errdefs.InvalidParameter(err)
		}
		if compress && (cfg.maxFile == 1 || cfg.maxSize == 0) {
			return cfg, errdefs.InvalidParameter(errors.New("compress cannot be true when max-file is less than 2 or max-size is not set"))
		}
		if compress {
			return cfg, errdefs.InvalidParameter(fmt.Errorf("log option compress=%q is not supported by json-file", v))
		}
	}
	return cfg, nil
}

// ValidateOptions checks --log-opt values without opening anything, so the
// API can reject a bad container config at create time.
func ValidateOptions(opts map[string]string) error {
	_, err := parseOptions(opts)
	return err
}

// New opens (appending to) or creates the log at path. Appending matters:
// after a daemon or shim restart the container's earlier output must stay.
func New(path string, opts map[string]string) (*Writer, error) {
	cfg, err := parseOptions(opts)
	if err != nil {
		return nil, err
	}
	w := &Writer{path: path, maxSize: cfg.maxSize, maxFile: cfg.maxFile}
	if err := w.open(); err != nil {
		return nil, err
	}
	return w, nil
}

func (w *Writer) open() error {
	f, err := os.OpenFile(w.path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o640)
	if err != nil {
		return fmt.Errorf("open log file: %w", err)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return fmt.Errorf("stat log file: %w", err)
	}
	w.f, w.size = f, st.Size()
	return nil
}

// WriteMessage appends one entry; line is stored verbatim as the "log" field
// (StreamWriter is what adds line splitting).
func (w *Writer) WriteMessage(stream string, line []byte, t time.Time) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf = appendEntry(w.buf[:0], stream, line, t)
	return w.writeLocked(w.buf, []int{len(w.buf)})
}

// writeEncoded appends entries encoded by the caller; ends[i] is where entry
// i ends in buf. Batching a whole chunk of output into one write(2) is what
// makes StreamWriter fast.
func (w *Writer) writeEncoded(buf []byte, ends []int) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.writeLocked(buf, ends)
}

func (w *Writer) writeLocked(buf []byte, ends []int) error {
	if w.closed {
		return errors.New("log writer is closed")
	}
	for i := 0; i < len(ends); {
		start := 0
		if i > 0 {
			start = ends[i-1]
		}
		j := len(ends) - 1
		if w.maxSize > 0 {
			// Never split an entry across files; a single entry larger
			// than max-size gets a file of its own.
			if w.size > 0 && w.size+int64(ends[i]-start) > w.maxSize {
				if err := w.rotate(); err != nil {
					return err
				}
			}
			j = i
			for j+1 < len(ends) && w.size+int64(ends[j+1]-start) <= w.maxSize {
				j++
			}
		}
		n, err := w.f.Write(buf[start:ends[j]])
		w.size += int64(n)
		if err != nil {
			return fmt.Errorf("write log: %w", err)
		}
		i = j + 1
	}
	return nil
}

// rotate shifts path -> path.1 -> ... and starts a fresh file. The new file
// always gets a new inode (even with max-file=1, where the old one is just
// removed) so that followers can notice the switch by comparing inodes.
func (w *Writer) rotate() error {
	if err := w.f.Close(); err != nil {
		slog.Warn("closing rotated log", "path", w.path, "err", err)
	}
	if w.maxFile <= 1 {
		if err := os.Remove(w.path); err != nil && !os.IsNotExist(err) {
			return fmt.Errorf("rotate log: %w", err)
		}
	} else {
		oldest := rotatedName(w.path, w.maxFile-1)
		if err := os.Remove(oldest); err != nil && !os.IsNotExist(err) {
			return fmt.Errorf("rotate log: %w", err)
		}
		for i := w.maxFile - 2; i >= 1; i-- {
			if err := os.Rename(rotatedName(w.path, i), rotatedName(w.path, i+1)); err != nil && !os.IsNotExist(err) {
				return fmt.Errorf("rotate log: %w", err)
			}
		}
		if err := os.Rename(w.path, rotatedName(w.path, 1)); err != nil {
			return fmt.Errorf("rotate log: %w", err)
		}
	}
	return w.open()
}

func rotatedName(path string, i int) string { return path + "." + strconv.Itoa(i) }

// Close closes the file. Later writes fail.
func (w *Writer) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return nil
	}
	w.closed = true
	return w.f.Close()
}

// maxPartial is the longest unterminated line kept in memory; beyond it the
// bytes are logged as their own entry so a process that never prints '\n'
// cannot make us buffer without bound.
const maxPartial = 16 * 1024

// StreamWriter returns an io.WriteCloser that turns an arbitrary byte stream
// (a container's stdout or stderr) into entries, one per line.
func (w *Writer) StreamWriter(stream string) io.WriteCloser {
	return &streamWriter{w: w, stream: stream, lines: linebuf.New(maxPartial)}
}

type streamWriter struct {
	mu     sync.Mutex
	w      *Writer
	stream string
	lines  *linebuf.Splitter
	enc    []byte // entries encoded by the current Write
	ends   []int
}

func (s *streamWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now()
	s.enc, s.ends = s.enc[:0], s.ends[:0]
	s.lines.Split(p, func(entry []byte) { s.add(entry, now) })
	if len(s.ends) > 0 {
		if err := s.w.writeEncoded(s.enc, s.ends); err != nil {
			return 0, err
		}
	}
	return len(p), nil
}

func (s *streamWriter) add(line []byte, t time.Time) {
	s.enc = appendEntry(s.enc, s.stream, line, t)
	s.ends = append(s.ends, len(s.enc))
}

// Close flushes a pending partial line (without adding a newline); it does
// not close the shared Writer.
func (s *streamWriter) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	var err error
	s.lines.Flush(func(entry []byte) { err = s.w.WriteMessage(s.stream, entry, time.Now()) })
	return err
}
