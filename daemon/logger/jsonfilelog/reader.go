package jsonfilelog

import (
	"bufio"
	"context"
	"encoding/json"
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

// entry is the on-disk form.
type entry struct {
	Log    string    `json:"log"`
	Stream string    `json:"stream"`
	Time   time.Time `json:"time"`
}

// Read calls fn for each selected entry, rotated files oldest first. With
// Follow it keeps delivering appended entries, across rotations, until ctx is
// cancelled (returns nil at once) or done is closed (the container stopped:
// what is already written is delivered first, then nil). An error from fn
// stops the read and is returned.
func Read(ctx context.Context, path string, opts ReadOptions, done <-chan struct{}, fn func(Message) error) error {
	r := &reader{path: path, opts: opts, fn: fn}
	defer r.reportCorrupt()
	return logfile.Read(ctx, path, opts, done, r, tailOffset)
}

// reader is json-file's logfile.Decoder.
type reader struct {
	path string
	opts ReadOptions
	fn   func(Message) error
	f    *os.File
	lr   *lineReader
	e    entry
	// corrupt counts the lines skipped as not being one whole entry.
	corrupt int
}

// reportCorrupt logs how many lines were skipped, if more than the one
// deliver warned of.
func (r *reader) reportCorrupt() {
	if r.corrupt > 1 {
		slog.Warn("skipped corrupt json-file log lines", "path", r.path, "count", r.corrupt)
	}
}

// SetFile starts reading f at its current offset.
func (r *reader) SetFile(f *os.File) {
	r.f = f
	r.lr = &lineReader{br: bufio.NewReaderSize(f, 64*1024)}
}

// Drain delivers every complete line up to the current end of r.f. A torn
// last line stays buffered in r.lr, to be completed by a later Drain.
func (r *reader) Drain() error {
	if r.lr == nil {
		return nil
	}
	for {
		line, err := r.lr.next()
		if err == io.EOF {
			return r.checkCut()
		}
		if err != nil {
			return fmt.Errorf("read log: %w", err)
		}
		if err := r.deliver(line); err != nil {
			return err
		}
	}
}

func (r *reader) deliver(line []byte) error {
	r.e = entry{}
	if !decodeFast(line, &r.e) {
		// Not our writer's exact shape: let encoding/json judge it.
		if err := json.Unmarshal(line, &r.e); err != nil {
			// A corrupt line (e.g. after a crash mid-write) must not
			// hide the rest: skipped, with one warning per read.
			if r.corrupt++; r.corrupt == 1 {
				slog.Warn("skipping corrupt json-file log line", "path", r.path, "err", err)
			}
			return nil
		}
	}
	return logfile.Deliver(r.opts, Message{Stream: r.e.Stream, Line: []byte(r.e.Log), Time: r.e.Time}, r.fn)
}

// checkCut handles, at the end of the data, an unfinished line the writer
// has since cut off (a write that failed part-way on a full disk): its
// bytes are dropped and reading goes on where the writer goes on, so that
// the next entry is not glued to them.
func (r *reader) checkCut() error {
	if len(r.lr.partial) == 0 {
		return nil
	}
	off, err := r.f.Seek(0, io.SeekCurrent)
	if err != nil {
		return fmt.Errorf("read log: %w", err)
	}
	st, err := r.f.Stat()
	if err != nil {
		return fmt.Errorf("stat log: %w", err)
	}
	if st.Size() >= off {
		return nil // not cut: the writer will finish the line
	}
	start := min(off-int64(len(r.lr.partial)), st.Size())
	if _, err := r.f.Seek(start, io.SeekStart); err != nil {
		return fmt.Errorf("seek log: %w", err)
	}
	r.SetFile(r.f)
	return nil
}
