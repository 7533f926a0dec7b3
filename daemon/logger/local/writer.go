// Package local stores container output in the format of Docker's local
// log driver, so that either engine reads the other's files: a sequence of
// records, each a big-endian uint32 length, the protobuf-encoded
// logdriver.LogEntry, and the same length again (which lets a reader walk
// the file backwards for tail). Rotated files are path.1, path.2, ...,
// gzip-compressed (path.N.gz) unless compress=false.
package local

import (
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"strconv"
	"sync"
	"time"

	"github.com/docker/docker/api/types/plugins/logdriver"
	"github.com/docker/go-units"

	"github.com/sdengine/engine/daemon/logger/linebuf"
	"github.com/sdengine/engine/daemon/logger/logfile"
	"github.com/sdengine/engine/pkg/errdefs"
)

// Docker's defaults: 20 MiB files, five of them, rotated ones compressed.
const (
	defaultMaxSize  = 20 * 1024 * 1024
	defaultMaxFile  = 5
	defaultCompress = true
)

// lenSize is the size of a record's leading and trailing length.
const lenSize = 4

// maxRecord is the largest entry a reader accepts, as Docker's does: a
// length beyond it is taken for corruption, not an allocation to make.
const maxRecord = 1_000_000

// maxPartial is the longest piece of a line kept in one entry, Docker's
// copier's buffer: a longer line becomes several partial entries.
const maxPartial = 16 * 1024

// parseOptions reads the options as Docker's local driver does, with its
// messages. Docker checks the values when the container starts; we check
// them at create (ValidateOptions) too.
func parseOptions(opts map[string]string) (logfile.Config, error) {
	cfg := logfile.Config{MaxSize: defaultMaxSize, MaxFile: defaultMaxFile, Compress: defaultCompress}
	for k := range opts {
		switch k {
		case "max-size", "max-file", "compress":
		default:
			return cfg, errdefs.InvalidParameter(fmt.Errorf("unknown log opt '%s' for log driver local", k))
		}
	}
	if v, ok := opts["max-size"]; ok {
		n, err := units.FromHumanSize(v)
		if err != nil {
			return cfg, errdefs.InvalidParameter(fmt.Errorf("invalid value for max-size: %s: %w", v, err))
		}
		// go-units refuses negative sizes. Docker rotates before every entry with max-size 0: each entry
		// gets a file of its own, as a size of 1 gives here.
		cfg.MaxSize = max(n, 1)
	}
	if v, ok := opts["max-file"]; ok {
		n, err := strconv.Atoi(v)
		if err != nil {
			return cfg, errdefs.InvalidParameter(fmt.Errorf("invalid value for max-file: %s: %w", v, err))
		}
		if n < 0 {
			return cfg, errdefs.InvalidParameter(errors.New("max file count cannot be less than 0"))
		}
		cfg.MaxFile = n
	}
	if v, ok := opts["compress"]; ok {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return cfg, errdefs.InvalidParameter(fmt.Errorf("error reading compress log option: %w", err))
		}
		cfg.Compress = b
	}
	if cfg.Compress && cfg.MaxFile <= 1 {
		return cfg, errdefs.InvalidParameter(errors.New("compression cannot be enabled when max file count is 1"))
	}
	return cfg, nil
}

// ValidateOptions checks --log-opt values without opening anything, so the
// API can reject a bad container config at create time.
func ValidateOptions(opts map[string]string) error {
	_, err := parseOptions(opts)
	return err
}

// Writer appends entries to a local-format log. It is safe for concurrent
// use: stdout and stderr share one Writer. The file only ever holds whole
// records (logfile.Writer).
type Writer struct {
	*logfile.Writer
}

// format is what logfile.Writer needs of the local format. There is no
// Mend: a reader cannot step over a fragment of a record, so while one
// cannot be cut nothing is written after it.
var format = logfile.Format{Name: "local", WholeEnd: wholeEnd}

// New opens (appending to) or creates the log at path.
func New(path string, opts map[string]string) (*Writer, error) {
	cfg, err := parseOptions(opts)
	if err != nil {
		return nil, err
	}
	lw, err := logfile.Open(path, cfg, format)
	if err != nil {
		return nil, err
	}
	return &Writer{Writer: lw}, nil
}

// appendRecord appends e as one record: length, protobuf, length.
func appendRecord(buf []byte, e *logdriver.LogEntry) ([]byte, error) {
	n := e.Size()
	start := len(buf)
	buf = append(buf, make([]byte, n+2*lenSize)...)
	binary.BigEndian.PutUint32(buf[start:], uint32(n))
	if _, err := e.MarshalTo(buf[start+lenSize : start+lenSize+n]); err != nil {
		return buf[:start], fmt.Errorf("encode log entry: %w", err)
	}
	binary.BigEndian.PutUint32(buf[start+lenSize+n:], uint32(n))
	return buf, nil
}

// wholeEnd returns where the last whole record of f's first size bytes
// ends. The common case, a file ending in a whole record, is seen from
// its last length alone; otherwise the records are walked from the start.
func wholeEnd(f io.ReaderAt, size int64) (int64, error) {
	if size == 0 {
		return 0, nil
	}
	if _, ok, err := recordBefore(f, size); err != nil {
		return 0, err
	} else if ok {
		return size, nil
	}
	var hdr [lenSize]byte
	var off int64
	for {
		if _, err := f.ReadAt(hdr[:], off); err != nil {
			if err == io.EOF {
				return off, nil
			}
			return 0, err
		}
		n := int64(binary.BigEndian.Uint32(hdr[:]))
		end := off + n + 2*lenSize
		if n > maxRecord || end > size {
			return off, nil
		}
		if _, err := f.ReadAt(hdr[:], end-lenSize); err != nil {
			return 0, err
		}
		if int64(binary.BigEndian.Uint32(hdr[:])) != n {
			return off, nil
		}
		off = end
	}
}

// recordBefore checks that a whole record ends at end, using its trailing
// length and the leading one it points to; it returns where that record
// starts.
func recordBefore(f io.ReaderAt, end int64) (int64, bool, error) {
	if end < 2*lenSize {
		return -1, false, nil
	}
	var b [lenSize]byte
	if _, err := f.ReadAt(b[:], end-lenSize); err != nil {
		return -1, false, err
	}
	n := int64(binary.BigEndian.Uint32(b[:]))
	start := end - n - 2*lenSize
	if n > maxRecord || start < 0 {
		return -1, false, nil
	}
	if _, err := f.ReadAt(b[:], start); err != nil {
		return -1, false, err
	}
	if int64(binary.BigEndian.Uint32(b[:])) != n {
		return -1, false, nil
	}
	return start, true, nil
}

// StreamWriter returns an io.WriteCloser that turns an arbitrary byte stream
// (a container's stdout or stderr) into entries, one per line, as Docker's
// copier does: the newline is not stored; a line cut into pieces (too
// long, or unfinished when the stream ends) is stored as partial entries
// sharing an ID and the first piece's time, the last of a finished line
// marked Last.
func (w *Writer) StreamWriter(stream string) io.WriteCloser {
	return &streamWriter{w: w, stream: stream, lines: linebuf.New(maxPartial)}
}

type streamWriter struct {
	mu     sync.Mutex
	w      *Writer
	stream string
	lines  *linebuf.Splitter
	enc    []byte // records encoded by the current Write
	ends   []int
	err    error
	e      logdriver.LogEntry
	meta   logdriver.PartialLogEntryMetadata
	// The line being cut into partial entries, if any.
	partialID string
	ordinal   int32
	partialTS time.Time
}

func (s *streamWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now()
	s.enc, s.ends, s.err = s.enc[:0], s.ends[:0], nil
	s.lines.Split(p, func(entry []byte) { s.add(entry, now) })
	if err := s.flush(); err != nil {
		return 0, err
	}
	return len(p), nil
}

func (s *streamWriter) flush() error {
	if s.err != nil {
		return s.err
	}
	if len(s.ends) == 0 {
		return nil
	}
	return s.w.Write(s.enc, s.ends, time.Unix(0, s.e.TimeNano))
}

func (s *streamWriter) add(entry []byte, now time.Time) {
	s.e = logdriver.LogEntry{Source: s.stream, TimeNano: now.UnixNano()}
	if line, whole := cutNewline(entry); whole {
		s.e.Line = line
		if s.partialID != "" {
			s.setPartial(true)
		}
	} else {
		if s.partialID == "" {
			s.partialID, s.ordinal, s.partialTS = newPartialID(), 1, now
		}
		s.e.Line = entry
		s.setPartial(false)
	}
	enc, err := appendRecord(s.enc, &s.e)
	if err != nil {
		s.err = err
		return
	}
	s.enc = enc
	s.ends = append(s.ends, len(s.enc))
}

// setPartial marks s.e as the next piece of the current partial line.
func (s *streamWriter) setPartial(last bool) {
	s.meta = logdriver.PartialLogEntryMetadata{Last: last, Id: s.partialID, Ordinal: s.ordinal}
	s.e.Partial, s.e.PartialLogMetadata = true, &s.meta
	s.e.TimeNano = s.partialTS.UnixNano()
	s.ordinal++
	if last {
		s.partialID = ""
	}
}

func cutNewline(entry []byte) ([]byte, bool) {
	if n := len(entry); n > 0 && entry[n-1] == '\n' {
		return entry[:n-1], true
	}
	return entry, false
}

// newPartialID is a random 64-hex-digit ID, the form Docker's are in.
func newPartialID() string {
	var b [32]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// Close flushes a pending unfinished line as a partial entry; it does not
// close the shared Writer.
func (s *streamWriter) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.enc, s.ends, s.err = s.enc[:0], s.ends[:0], nil
	s.lines.Flush(func(entry []byte) { s.add(entry, time.Now()) })
	return s.flush()
}
