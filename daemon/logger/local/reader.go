package local

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"

	"github.com/docker/docker/api/types/plugins/logdriver"

	"github.com/sdengine/engine/daemon/logger/logfile"
)

// Read calls fn for each selected entry, rotated files oldest first; with
// Follow it goes on across rotations until ctx is cancelled or done is
// closed (logfile.Read).
func Read(ctx context.Context, path string, opts logfile.ReadOptions, done <-chan struct{}, fn func(logfile.Message) error) error {
	r := &reader{path: path, opts: opts, fn: fn}
	return logfile.Read(ctx, path, opts, done, r, tailOffset)
}

// reader is the local format's logfile.Decoder. It reads at explicit
// offsets: buf holds the file's bytes from bufOff on, of which pos are
// delivered, so that an unfinished record waits in buf for its rest.
type reader struct {
	path   string
	opts   logfile.ReadOptions
	fn     func(logfile.Message) error
	f      *os.File
	buf    []byte
	bufOff int64
	pos    int
	e      logdriver.LogEntry
	warned bool
}

// SetFile starts reading f at its current offset.
func (r *reader) SetFile(f *os.File) {
	off, err := f.Seek(0, io.SeekCurrent)
	if err != nil {
		off = 0
	}
	r.f, r.bufOff, r.pos = f, off, 0
	r.buf = r.buf[:0]
}

// Drain delivers every whole record up to the current end of the file.
func (r *reader) Drain() error {
	if r.f == nil {
		return nil
	}
	for {
		rec, err := r.next()
		if err != nil {
			return err
		}
		if rec == nil {
			return r.checkCut()
		}
		if err := r.deliver(rec); err != nil {
			return err
		}
	}
}

// next returns the next whole record's protobuf, or nil when the file
// holds no whole record past pos yet.
func (r *reader) next() ([]byte, error) {
	if !r.have(lenSize) {
		return nil, r.fillErr()
	}
	n := int(binary.BigEndian.Uint32(r.buf[r.pos:]))
	if n > maxRecord {
		return nil, r.corrupt(fmt.Errorf("record of %d bytes", n))
	}
	if !r.have(n + 2*lenSize) {
		return nil, r.fillErr()
	}
	rec := r.buf[r.pos+lenSize : r.pos+lenSize+n]
	if int(binary.BigEndian.Uint32(r.buf[r.pos+lenSize+n:])) != n {
		return nil, r.corrupt(fmt.Errorf("lengths of a record differ"))
	}
	r.pos += n + 2*lenSize
	return rec, nil
}

// have reports whether n bytes past pos are buffered, reading more of the
// file if they are not.
func (r *reader) have(n int) bool {
	for len(r.buf)-r.pos < n {
		if r.pos > 0 {
			// Keep only what is not delivered.
			r.bufOff += int64(r.pos)
			r.buf = r.buf[:copy(r.buf, r.buf[r.pos:])]
			r.pos = 0
		}
		if cap(r.buf)-len(r.buf) < 64*1024 {
			r.buf = append(r.buf, make([]byte, max(64*1024, n))...)[:len(r.buf)]
		}
		m, err := r.f.ReadAt(r.buf[len(r.buf):cap(r.buf)], r.bufOff+int64(len(r.buf)))
		r.buf = r.buf[:len(r.buf)+m]
		if m == 0 || (err != nil && err != io.EOF) {
			return len(r.buf)-r.pos >= n
		}
	}
	return true
}

// fillErr is an error from reading at the current offset, or nil at the
// end of the data.
func (r *reader) fillErr() error {
	var b [1]byte
	if _, err := r.f.ReadAt(b[:], r.bufOff+int64(len(r.buf))); err != nil && err != io.EOF {
		return fmt.Errorf("read log: %w", err)
	}
	return nil
}

// corrupt handles a record that is not one: warned once, and reading
// goes on from the file's current end, the next place a record is known
// to start, rather than hiding everything after it.
func (r *reader) corrupt(err error) error {
	if !r.warned {
		slog.Warn("skipping corrupt local log data", "path", r.path, "offset", r.bufOff+int64(r.pos), "err", err)
		r.warned = true
	}
	st, serr := r.f.Stat()
	if serr != nil {
		return fmt.Errorf("stat log: %w", serr)
	}
	r.bufOff, r.pos, r.buf = st.Size(), 0, r.buf[:0]
	return nil
}

// checkCut handles, at the end of the data, an unfinished record the
// writer has since cut off (a write that failed part-way on a full disk):
// its bytes are dropped, so that the next record is read from where the
// writer wrote it.
func (r *reader) checkCut() error {
	end := r.bufOff + int64(len(r.buf))
	if r.pos == len(r.buf) {
		return nil
	}
	st, err := r.f.Stat()
	if err != nil {
		return fmt.Errorf("stat log: %w", err)
	}
	if st.Size() >= end {
		return nil // not cut: the writer will finish the record
	}
	r.buf = r.buf[:max(int64(r.pos), st.Size()-r.bufOff)]
	return nil
}

func (r *reader) deliver(rec []byte) error {
	r.e.Reset()
	if err := r.e.Unmarshal(rec); err != nil {
		if !r.warned {
			slog.Warn("skipping undecodable local log entry", "path", r.path, "err", err)
			r.warned = true
		}
		return nil
	}
	line := r.e.Line
	// Docker's rule: the newline a whole line had is given back; a piece
	// of a line other than its last is not followed by one.
	if !r.e.Partial || r.e.GetPartialLogMetadata().GetLast() {
		line = append(line, '\n')
	}
	m := logfile.Message{Stream: r.e.Source, Line: line, Time: time.Unix(0, r.e.TimeNano).UTC()}
	return logfile.Deliver(r.opts, m, r.fn)
}

// tailOffset walks f backwards by the records' trailing lengths and
// returns where its last n records start, and how many (<= n) that is.
// A file not ending in a whole record (a write in progress) is walked from
// where its last whole record ends.
func tailOffset(f *os.File, n int) (int64, int, error) {
	st, err := f.Stat()
	if err != nil {
		return 0, 0, err
	}
	end := st.Size()
	if _, ok, err := recordBefore(f, end); err != nil {
		return 0, 0, err
	} else if !ok {
		if end, err = wholeEnd(f, end); err != nil {
			return 0, 0, err
		}
	}
	found := 0
	for found < n && end > 0 {
		start, ok, err := recordBefore(f, end)
		if err != nil {
			return 0, 0, err
		}
		if !ok {
			break
		}
		end = start
		found++
	}
	return end, found, nil
}
