package crilog

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"

	"github.com/sdengine/engine/daemon/logger/logfile"
)

// Message and ReadOptions are the file drivers' shared reading types.
type (
	Message     = logfile.Message
	ReadOptions = logfile.ReadOptions
)

// record is one parsed line of the file.
type record struct {
	time    time.Time
	stream  string
	partial bool
	content []byte // without the newline
}

// parseRecord reads one line (with or without its newline) as the
// kubelet does: three space-separated fields, then the content; of the tag
// only what precedes a ':' counts (later tags may add more).
func parseRecord(line []byte) (record, error) {
	var r record
	line = bytes.TrimSuffix(line, []byte{'\n'})
	ts, rest, ok := bytes.Cut(line, []byte{' '})
	if !ok {
		return r, errors.New("no timestamp")
	}
	t, err := time.Parse(time.RFC3339Nano, string(ts))
	if err != nil {
		return r, fmt.Errorf("bad timestamp: %w", err)
	}
	stream, rest, ok := bytes.Cut(rest, []byte{' '})
	if !ok {
		return r, errors.New("no stream")
	}
	switch string(stream) {
	case "stdout", "stderr":
	default:
		return r, fmt.Errorf("unknown stream %q", stream)
	}
	tag, content, ok := bytes.Cut(rest, []byte{' '})
	if !ok {
		return r, errors.New("no tag")
	}
	tag, _, _ = bytes.Cut(tag, []byte{':'})
	switch string(tag) {
	case "F":
	case "P":
		r.partial = true
	default:
		return r, fmt.Errorf("unknown tag %q", tag)
	}
	r.time, r.stream, r.content = t, string(stream), content
	return r, nil
}

// Read calls fn for each line of the log at path, the P pieces of a line
// joined to it: with Follow it keeps delivering what is appended, across
// reopens, until ctx is cancelled (returns nil at once) or done is closed
// (the container stopped: what is already written is delivered first,
// then nil). An error from fn stops the read and is returned. The files
// the kubelet renamed away are not read: they are the kubelet's.
func Read(ctx context.Context, path string, opts ReadOptions, done <-chan struct{}, fn func(Message) error) error {
	r := &reader{path: path, opts: opts, fn: fn}
	defer r.reportCorrupt()
	return logfile.Read(ctx, path, opts, done, r, tailOffset)
}

// reader is the cri format's logfile.Decoder.
type reader struct {
	path string
	opts ReadOptions
	fn   func(Message) error
	br   *bufio.Reader
	// torn is an unterminated last line, completed by a later Drain.
	torn []byte
	// pieces holds the P records not yet ended by an F one. Our writer
	// writes all the pieces of a whole line at once, so a record of the
	// other stream comes between pieces only when a line was cut before
	// its end was printed: that record then delivers the pieces as they
	// are, to keep the order of the file.
	pieces *Message
	// corrupt counts the lines skipped as not being records.
	corrupt int
}

func (r *reader) reportCorrupt() {
	if r.corrupt > 1 {
		slog.Warn("skipped corrupt cri log lines", "path", r.path, "count", r.corrupt)
	}
}

// SetFile starts reading f at its current offset.
func (r *reader) SetFile(f *os.File) {
	r.br = bufio.NewReaderSize(f, 64*1024)
	r.torn = r.torn[:0]
}

// Drain delivers every line up to the current end of the file. A line
// still in pieces at the end is delivered as far as it goes, so that a
// read never holds output back; what follows comes as a line of its own.
func (r *reader) Drain() error {
	if r.br == nil {
		return nil
	}
	for {
		chunk, err := r.br.ReadSlice('\n')
		if err == bufio.ErrBufferFull {
			r.torn = append(r.torn, chunk...)
			continue
		}
		if err == io.EOF {
			r.torn = append(r.torn, chunk...)
			return r.flushPieces()
		}
		if err != nil {
			return fmt.Errorf("read log: %w", err)
		}
		line := chunk
		if len(r.torn) > 0 {
			r.torn = append(r.torn, chunk...)
			line = r.torn
		}
		derr := r.deliver(line)
		r.torn = r.torn[:0]
		if derr != nil {
			return derr
		}
	}
}

func (r *reader) deliver(line []byte) error {
	rec, err := parseRecord(line)
	if err != nil {
		// A corrupt line must not hide the rest: skipped, with one
		// warning per read.
		if r.corrupt++; r.corrupt == 1 {
			slog.Warn("skipping corrupt cri log line", "path", r.path, "err", err)
		}
		return nil
	}
	if r.pieces != nil && r.pieces.Stream != rec.stream {
		if err := r.flushPieces(); err != nil {
			return err
		}
	}
	m := r.pieces
	if m == nil {
		m = &Message{Stream: rec.stream, Time: rec.time}
	}
	m.Line = append(m.Line, rec.content...)
	if rec.partial {
		r.pieces = m
		return nil
	}
	r.pieces = nil
	m.Line = append(m.Line, '\n')
	return logfile.Deliver(r.opts, *m, r.fn)
}

// flushPieces delivers the line still in pieces, if any, as far as it goes.
func (r *reader) flushPieces() error {
	m := r.pieces
	if m == nil {
		return nil
	}
	r.pieces = nil
	return logfile.Deliver(r.opts, *m, r.fn)
}

// tailOffset finds where the last n lines of f begin, a line being the
// records up to an F one: just past the (n+1)th F record from the end.
// The last record counts as a line's end even if it is a P one: the
// output ended without a newline, and Read delivers it as a line. It
// reads the file backwards, and of each record only its head.
func tailOffset(f *os.File, n int) (int64, int, error) {
	head := make([]byte, 128)
	found := 0
	// isFull tells whether the record starting at off is an F one.
	isFull := func(off int64) bool {
		k, _ := f.ReadAt(head, off)
		h, _, _ := bytes.Cut(head[:k], []byte{'\n'})
		// The content may be cut off here: only the fields before it
		// count, and a corrupt line is no line.
		rec, err := parseRecord(h)
		return err == nil && !rec.partial
	}
	// next is the start of the record after the one being looked at;
	// the last, unterminated one (if any) is never counted.
	var size int64
	next := int64(-1)
	// atEnd tells whether the record starting at off ends a line, and
	// counts it; true once it is the (n+1)th from the end.
	atEnd := func(off int64) bool {
		// The last record ends a line whatever it is (the file ends in
		// a newline after it).
		if next >= 0 && (next == size || isFull(off)) {
			if found++; found == n+1 {
				return true
			}
		}
		next = off
		return false
	}
	st, err := f.Stat()
	if err != nil {
		return 0, 0, err
	}
	size = st.Size()
	stopped, err := logfile.LineStarts(f, size, atEnd)
	if err != nil {
		return 0, 0, err
	}
	if stopped {
		return next, n, nil
	}
	// The first record starts the file, after no newline.
	if atEnd(0) {
		return next, n, nil
	}
	return 0, found, nil
}
