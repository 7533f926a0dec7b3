package jsonfilelog

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"
)

// Message is one decoded log entry.
type Message struct {
	Stream string
	Line   []byte
	Time   time.Time
}

// ReadOptions selects which entries Read delivers.
type ReadOptions struct {
	Follow bool
	Tail   int // number of last lines; <0 = all
	Since  time.Time
	Until  time.Time
}

// entry is the on-disk form.
type entry struct {
	Log    string    `json:"log"`
	Stream string    `json:"stream"`
	Time   time.Time `json:"time"`
}

// errStop ends a read early without it being an error (Until reached).
var errStop = errors.New("stop")

// Read calls fn for each selected entry, rotated files oldest first. With
// Follow it keeps delivering appended entries, across rotations, until ctx is
// cancelled (returns nil at once) or done is closed (the container stopped:
// what is already written is delivered first, then nil). An error from fn
// stops the read and is returned.
func Read(ctx context.Context, path string, opts ReadOptions, done <-chan struct{}, fn func(Message) error) error {
	files, err := openLogFiles(path)
	if err != nil {
		return err
	}
	defer func() {
		for _, f := range files {
			f.Close()
		}
	}()
	r := &reader{ctx: ctx, path: path, opts: opts, done: done, fn: fn}
	defer r.reportCorrupt()

	startIdx, startOff := 0, int64(0)
	if opts.Tail >= 0 {
		if startIdx, startOff, err = tailStart(files, opts.Tail); err != nil {
			return err
		}
	}

	for i := startIdx; i < len(files); i++ {
		off := int64(0)
		if i == startIdx {
			off = startOff
		}
		if _, err := files[i].Seek(off, io.SeekStart); err != nil {
			return fmt.Errorf("seek log: %w", err)
		}
		r.setFile(files[i])
		if err := r.drain(); err != nil {
			return r.result(err)
		}
	}
	if !opts.Follow {
		return nil
	}
	// r.f is now the newest file (or nil if there is no log yet); follow
	// switches to whatever appears at path when that is not it.
	return r.result(r.follow())
}

type reader struct {
	ctx  context.Context
	path string
	opts ReadOptions
	done <-chan struct{}
	fn   func(Message) error
	f    *os.File
	lr   *lineReader
	e    entry
	// owned is the file follow opened after a rotation, closed on return.
	owned *os.File
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

func (r *reader) setFile(f *os.File) {
	r.f = f
	r.lr = &lineReader{br: bufio.NewReaderSize(f, 64*1024)}
}

func (r *reader) result(err error) error {
	if err == errStop {
		return nil
	}
	return err
}

// drain delivers every complete line up to the current end of r.f. A torn
// last line stays buffered in r.lr, to be completed by a later drain.
func (r *reader) drain() error {
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
	if !r.opts.Since.IsZero() && r.e.Time.Before(r.opts.Since) {
		return nil
	}
	if !r.opts.Until.IsZero() && r.e.Time.After(r.opts.Until) {
		return errStop
	}
	return r.fn(Message{Stream: r.e.Stream, Line: []byte(r.e.Log), Time: r.e.Time})
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
	r.setFile(r.f)
	return nil
}

// follow waits for appended data and rotations until told to stop.
func (r *reader) follow() error {
	w := newWatcher(r.path)
	defer w.close()
	defer func() {
		if r.owned != nil {
			r.owned.Close()
		}
	}()
	for {
		if err := r.drain(); err != nil {
			return err
		}
		switched, err := r.checkRotation()
		if err != nil {
			return err
		}
		if switched {
			continue
		}
		select {
		case <-r.ctx.Done():
			return nil
		case <-r.done:
			// The writer is gone: pick up anything written since the
			// last drain, including a final rotation, then stop.
			for {
				if err := r.drain(); err != nil {
					return err
				}
				switched, err := r.checkRotation()
				if err != nil || !switched {
					return err
				}
			}
		default:
		}
		if !r.opts.Until.IsZero() && time.Now().After(r.opts.Until) {
			return r.drain()
		}
		w.wait(100 * time.Millisecond)
	}
}

// checkRotation switches to the file now at r.path if it is not the one being
// read. The old file is drained first: after a rotation the writer never
// touches it again, so its remaining lines are complete.
func (r *reader) checkRotation() (bool, error) {
	st, err := os.Stat(r.path)
	if err != nil {
		if os.IsNotExist(err) {
			return false, nil // between rename and create, or not yet created
		}
		return false, fmt.Errorf("stat log: %w", err)
	}
	next := r.path
	if r.f != nil {
		cst, statErr := r.f.Stat()
		if statErr == nil && os.SameFile(st, cst) {
			return false, nil
		}
		if err := r.drain(); err != nil {
			return false, err
		}
		if statErr == nil {
			next = successor(r.path, cst)
		}
	}
	f, err := os.Open(next)
	if err != nil {
		if os.IsNotExist(err) {
			return false, nil
		}
		return false, fmt.Errorf("open log: %w", err)
	}
	// Files from openLogFiles are closed by Read; only ones opened here are
	// ours to close.
	if r.owned != nil {
		r.owned.Close()
	}
	r.owned = f
	r.setFile(f)
	return true, nil
}

// successor names the file written after cur: if the writer rotated more
// than once since we last looked, cur is now path.k and path.(k-1) comes next,
// not path. If cur is gone (max-file reached), path is the best we can do.
func successor(path string, cur os.FileInfo) string {
	for i := 1; ; i++ {
		st, err := os.Stat(rotatedName(path, i))
		if err != nil {
			return path
		}
		if os.SameFile(st, cur) {
			if i == 1 {
				return path
			}
			return rotatedName(path, i-1)
		}
	}
}

// openLogFiles opens path and its rotations, oldest first. Files are opened
// newest first and deduplicated by inode so a rotation happening meanwhile
// yields a file twice rather than never.
func openLogFiles(path string) ([]*os.File, error) {
	var newestFirst []*os.File
	var seen []os.FileInfo
	add := func(name string) (bool, error) {
		f, err := os.Open(name)
		if err != nil {
			if os.IsNotExist(err) {
				return false, nil
			}
			return false, fmt.Errorf("open log: %w", err)
		}
		st, err := f.Stat()
		if err != nil {
			f.Close()
			return false, fmt.Errorf("stat log: %w", err)
		}
		for _, s := range seen {
			if os.SameFile(s, st) {
				f.Close()
				return true, nil
			}
		}
		seen = append(seen, st)
		newestFirst = append(newestFirst, f)
		return true, nil
	}
	closeAll := func() {
		for _, f := range newestFirst {
			f.Close()
		}
	}
	if _, err := add(path); err != nil {
		return nil, err
	}
	for i := 1; ; i++ {
		ok, err := add(rotatedName(path, i))
		if err != nil {
			closeAll()
			return nil, err
		}
		if !ok {
			break
		}
	}
	files := make([]*os.File, len(newestFirst))
	for i, f := range newestFirst {
		files[len(files)-1-i] = f
	}
	return files, nil
}
