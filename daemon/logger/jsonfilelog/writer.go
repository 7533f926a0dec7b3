// Package jsonfilelog stores container output in Docker's json-file format:
// one JSON object per line, {"log":"...","stream":"stdout","time":"..."},
// with size-based rotation (path, path.1, path.2, ...; higher is older).
package jsonfilelog

import (
	"bytes"
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
//
// The file only ever holds whole lines: a write that fails part-way (a
// full disk) is cut back to the last whole entry, and the entries that did
// not make it are counted as dropped (Dropped). A later entry is thus
// never appended to half of an earlier one.
type Writer struct {
	mu      sync.Mutex
	path    string
	f       logFile
	size    int64 // bytes in the current file: where its last whole entry ends
	maxSize int64 // 0 = unlimited
	maxFile int
	buf     []byte
	closed  bool
	// torn: the file has bytes past size (a cut that failed) to remove
	// before the next entry.
	torn    bool
	dropped uint64
}

// logFile is what Writer needs of its *os.File; tests inject faults.
type logFile interface {
	Write(p []byte) (int, error)
	Truncate(size int64) error
	Stat() (os.FileInfo, error)
	Close() error
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
	f, err := os.OpenFile(w.path, os.O_RDWR|os.O_APPEND|os.O_CREATE, 0o640)
	if err != nil {
		return fmt.Errorf("open log file: %w", err)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return fmt.Errorf("stat log file: %w", err)
	}
	// An earlier writer may have died mid-entry: entries go after the
	// last whole one.
	end, err := lastLineEnd(f, st.Size())
	if err != nil {
		f.Close()
		return fmt.Errorf("read log file: %w", err)
	}
	w.f, w.size, w.torn = f, end, end < st.Size()
	if w.torn {
		slog.Warn("json-file log ends in a torn entry; cutting it", "path", w.path, "bytes", st.Size()-end)
		w.cutTorn()
	}
	return nil
}

// lastLineEnd returns the offset just past the last '\n' of f's first
// size bytes (0 if there is none), reading only the file's tail.
func lastLineEnd(f *os.File, size int64) (int64, error) {
	const block = 4096
	buf := make([]byte, block)
	for end := size; end > 0; {
		n := int64(block)
		if end < n {
			n = end
		}
		if _, err := f.ReadAt(buf[:n], end-n); err != nil {
			return 0, err
		}
		if i := bytes.LastIndexByte(buf[:n], '\n'); i >= 0 {
			return end - n + int64(i) + 1, nil
		}
		end -= n
	}
	return 0, nil
}

// cutTorn removes what lies past the last whole entry. If that fails the
// next write starts with a newline instead, so that the torn bytes stay a
// line of their own (which readers skip) and the new entry stays whole.
func (w *Writer) cutTorn() {
	if err := w.f.Truncate(w.size); err != nil {
		slog.Warn("cutting a torn json-file log entry", "path", w.path, "err", err)
		return
	}
	w.torn = false
}

// Dropped is how many entries could not be written (a full disk) since
// the log was opened.
func (w *Writer) Dropped() uint64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.dropped
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
	if w.torn {
		if err := w.endTornLine(); err != nil {
			w.dropped += uint64(len(ends))
			return fmt.Errorf("write log: %w", err)
		}
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
					w.dropped += uint64(len(ends) - i)
					return err
				}
			}
			j = i
			for j+1 < len(ends) && w.size+int64(ends[j+1]-start) <= w.maxSize {
				j++
			}
		}
		n, err := w.f.Write(buf[start:ends[j]])
		if err != nil {
			// Keep the entries written whole; cut the rest.
			for i <= j && ends[i]-start <= n {
				i++
			}
			kept := 0
			if i > 0 {
				kept = ends[i-1] - start
			}
			w.size += int64(kept)
			if kept < n {
				w.torn = true
				w.cutTorn()
			}
			w.dropped += uint64(len(ends) - i)
			return fmt.Errorf("write log: %w", err)
		}
		w.size += int64(n)
		i = j + 1
	}
	return nil
}

// endTornLine deals with bytes a failed cut left past the last whole
// entry: cut them now, or else end them with a newline.
func (w *Writer) endTornLine() error {
	if w.cutTorn(); !w.torn {
		return nil
	}
	if _, err := w.f.Write([]byte{'\n'}); err != nil {
		return err
	}
	st, err := w.f.Stat()
	if err != nil {
		return err
	}
	w.size, w.torn = st.Size(), false
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
