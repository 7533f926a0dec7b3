// Package jsonfilelog stores container output in Docker's json-file format:
// one JSON object per line, {"log":"...","stream":"stdout","time":"..."},
// with size-based rotation (path, path.1, path.2, ...; higher is older).
package jsonfilelog

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"
	"sync"
	"time"

	"github.com/docker/go-units"

	"github.com/sdengine/engine/daemon/logger/linebuf"
	"github.com/sdengine/engine/daemon/logger/logfile"
	"github.com/sdengine/engine/pkg/errdefs"
)

// Writer appends log entries to a json-file log. It is safe for concurrent
// use: stdout and stderr copiers share one Writer. The file only ever holds
// whole lines (logfile.Writer).
type Writer struct {
	*logfile.Writer
	mu  sync.Mutex // guards buf
	buf []byte
}

// format is what logfile.Writer needs of json-file: an entry is a line,
// and a fragment that could not be cut is ended by a newline, which makes
// it a line of its own that readers skip.
var format = logfile.Format{Name: "json-file", WholeEnd: lastLineEnd, Mend: []byte{'\n'}}

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

// New opens (appending to) or creates the log at path.
func New(path string, opts map[string]string) (*Writer, error) {
	cfg, err := parseOptions(opts)
	if err != nil {
		return nil, err
	}
	lw, err := logfile.Open(path, logfile.Config{MaxSize: cfg.maxSize, MaxFile: cfg.maxFile}, format)
	if err != nil {
		return nil, err
	}
	return &Writer{Writer: lw}, nil
}

// lastLineEnd returns the offset just past the last '\n' of f's first
// size bytes (0 if there is none), reading only the file's tail.
func lastLineEnd(f io.ReaderAt, size int64) (int64, error) {
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

// WriteMessage appends one entry; line is stored verbatim as the "log" field
// (StreamWriter is what adds line splitting).
func (w *Writer) WriteMessage(stream string, line []byte, t time.Time) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf = appendEntry(w.buf[:0], stream, line, t)
	return w.Write(w.buf, []int{len(w.buf)}, t)
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
		if err := s.w.Write(s.enc, s.ends, now); err != nil {
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
