package logfile

import (
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"time"
)

// ErrStop ends a read early without it being an error (Until reached).
var ErrStop = errors.New("stop")

// Decoder reads one driver's entries, one file at a time.
type Decoder interface {
	// SetFile starts reading f at its current offset, dropping any
	// unfinished entry held from the file before.
	SetFile(f *os.File)
	// Drain delivers every whole entry up to the current end of the file
	// set; an entry the writer has not finished stays held, to be
	// completed by a later Drain. ErrStop ends the read.
	Drain() error
}

// Message is one decoded log entry.
type Message struct {
	Stream string
	Line   []byte
	Time   time.Time
}

// ReadOptions selects which entries a read delivers.
type ReadOptions struct {
	Follow bool
	Tail   int // number of last entries; <0 = all
	Since  time.Time
	Until  time.Time
}

// Deliver passes m to fn if it is inside the window opts give; an entry
// after Until ends the read (ErrStop).
func Deliver(opts ReadOptions, m Message, fn func(Message) error) error {
	if !opts.Since.IsZero() && m.Time.Before(opts.Since) {
		return nil
	}
	if !opts.Until.IsZero() && m.Time.After(opts.Until) {
		return ErrStop
	}
	return fn(m)
}

// TailOffset finds where the last n entries of f begin: the offset, and
// how many whole entries (<= n) start there.
type TailOffset func(f *os.File, n int) (int64, int, error)

// Read feeds dec every file of the log at path, rotated files oldest
// first. With Follow it keeps delivering appended entries, across
// rotations, until ctx is cancelled (returns nil at once) or done is
// closed (the container stopped: what is already written is delivered
// first, then nil). An error from dec stops the read and is returned.
func Read(ctx context.Context, path string, cfg ReadOptions, done <-chan struct{}, dec Decoder, tail TailOffset) error {
	segs, err := openSegments(path, cfg.Since)
	if err != nil {
		return err
	}
	defer func() {
		for _, s := range segs {
			s.close()
		}
	}()
	startIdx, startOff := 0, int64(0)
	if cfg.Tail >= 0 {
		if startIdx, startOff, err = tailStart(segs, cfg.Tail, tail); err != nil {
			return err
		}
	}
	var cur *os.File
	for i := startIdx; i < len(segs); i++ {
		f, err := segs[i].file()
		if err != nil {
			return err
		}
		off := int64(0)
		if i == startIdx {
			off = startOff
		}
		if _, err := f.Seek(off, io.SeekStart); err != nil {
			return fmt.Errorf("seek log: %w", err)
		}
		dec.SetFile(f)
		cur = f
		if err := dec.Drain(); err != nil {
			return result(err)
		}
	}
	if !cfg.Follow {
		return nil
	}
	// cur is now the newest file (or nil if there is no log yet); follow
	// switches to whatever appears at path when that is not it.
	fl := &follower{ctx: ctx, path: path, done: done, until: cfg.Until, dec: dec, cur: cur}
	return result(fl.follow())
}

func result(err error) error {
	if err == ErrStop {
		return nil
	}
	return err
}

type follower struct {
	ctx   context.Context
	path  string
	done  <-chan struct{}
	until time.Time
	dec   Decoder
	cur   *os.File
	// owned is the file follow opened after a rotation, closed on return.
	owned *os.File
}

// follow waits for appended data and rotations until told to stop.
func (r *follower) follow() error {
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
		if !r.until.IsZero() && time.Now().After(r.until) {
			return r.drain()
		}
		w.wait(100 * time.Millisecond)
	}
}

func (r *follower) drain() error {
	if r.cur == nil {
		return nil
	}
	return r.dec.Drain()
}

// checkRotation switches to the file now at r.path if it is not the one
// being read. The old file is drained first: after a rotation the writer
// never touches it again, so its remaining entries are whole.
func (r *follower) checkRotation() (bool, error) {
	st, err := os.Stat(r.path)
	if err != nil {
		if os.IsNotExist(err) {
			return false, nil // between rename and create, or not yet created
		}
		return false, fmt.Errorf("stat log: %w", err)
	}
	next := r.path
	if r.cur != nil {
		cst, statErr := r.cur.Stat()
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
	// Files from openSegments are closed by Read; only ones opened here
	// are ours to close.
	if r.owned != nil {
		r.owned.Close()
	}
	r.owned, r.cur = f, f
	r.dec.SetFile(f)
	return true, nil
}

// successor names the file written after cur: if the writer rotated more
// than once since we last looked, cur is now path.k and path.(k-1) comes
// next, not path. If cur is gone (max-file reached, or compressed), path
// is the best we can do.
func successor(path string, cur os.FileInfo) string {
	for i := 1; ; i++ {
		st, err := os.Stat(RotatedName(path, i))
		if err != nil {
			return path
		}
		if os.SameFile(st, cur) {
			if i == 1 {
				return path
			}
			return RotatedName(path, i-1)
		}
	}
}

// segment is one file of a log, current or rotated, open for reading. A
// compressed one is inflated only when it is read.
type segment struct {
	f     *os.File
	gz    bool
	plain *os.File // the inflated copy of a compressed file
}

// file returns the segment's content as a seekable file.
func (s *segment) file() (*os.File, error) {
	if !s.gz {
		return s.f, nil
	}
	if s.plain != nil {
		return s.plain, nil
	}
	tmp, err := os.CreateTemp("", "log-inflate-")
	if err != nil {
		return nil, fmt.Errorf("inflate log: %w", err)
	}
	// Unlinked at once: it lives only as long as this read.
	os.Remove(tmp.Name())
	zr, err := gzip.NewReader(s.f)
	if err == nil {
		_, err = io.Copy(tmp, zr)
	}
	if err != nil {
		tmp.Close()
		return nil, fmt.Errorf("inflate log %s: %w", s.f.Name(), err)
	}
	s.plain = tmp
	return tmp, nil
}

func (s *segment) close() {
	s.f.Close()
	if s.plain != nil {
		s.plain.Close()
	}
}

// openSegments opens path and its rotations (plain, or else .gz), oldest
// first. Files are opened newest first and deduplicated by inode so a
// rotation happening meanwhile yields a file twice rather than never. A
// compressed file whose last entry is before since is left out.
func openSegments(path string, since time.Time) ([]*segment, error) {
	var newestFirst []*segment
	var seen []os.FileInfo
	closeAll := func() {
		for _, s := range newestFirst {
			s.close()
		}
	}
	add := func(name string, gz bool) (bool, error) {
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
		if gz && olderThan(f, since) {
			f.Close()
			return true, nil
		}
		newestFirst = append(newestFirst, &segment{f: f, gz: gz})
		return true, nil
	}
	if _, err := add(path, false); err != nil {
		return nil, err
	}
	// The writer's shift leaves at most one name missing at a time: stop
	// at two in a row.
	for i, missing := 1, 0; missing < 2; i++ {
		ok, err := add(RotatedName(path, i), false)
		if err == nil && !ok {
			ok, err = add(RotatedName(path, i)+".gz", true)
		}
		if err != nil {
			closeAll()
			return nil, err
		}
		if ok {
			missing = 0
		} else {
			missing++
		}
	}
	segs := make([]*segment, len(newestFirst))
	for i, s := range newestFirst {
		segs[len(segs)-1-i] = s
	}
	return segs, nil
}

// olderThan reads a compressed file's header: true if its last entry is
// before since. The file is left at its start.
func olderThan(f *os.File, since time.Time) bool {
	if since.IsZero() {
		return false
	}
	defer f.Seek(0, io.SeekStart)
	zr, err := gzip.NewReader(f)
	if err != nil {
		return false
	}
	var extra gzipExtra
	if json.Unmarshal(zr.Header.Extra, &extra) != nil || extra.LastTime.IsZero() {
		return false
	}
	return extra.LastTime.Before(since)
}

// tailStart finds where the last n entries begin across segments (oldest
// first): the index of the segment and the offset within it.
func tailStart(segs []*segment, n int, tail TailOffset) (int, int64, error) {
	need := n
	for i := len(segs) - 1; i >= 0; i-- {
		f, err := segs[i].file()
		if err != nil {
			return 0, 0, err
		}
		off, found, err := tail(f, need)
		if err != nil {
			return 0, 0, err
		}
		if found >= need {
			return i, off, nil
		}
		need -= found
	}
	return 0, 0, nil
}

// LineStarts calls fn with the offset just past each newline of the first
// size bytes of f, from the end back to the start (for a driver's
// TailOffset, which must not read a big file from its beginning), until fn
// returns true. It tells whether fn stopped it.
func LineStarts(f *os.File, size int64, fn func(off int64) (stop bool)) (bool, error) {
	const block = 32 * 1024
	buf := make([]byte, block)
	for pos := size; pos > 0; {
		sz := min(int64(block), pos)
		pos -= sz
		if _, err := f.ReadAt(buf[:sz], pos); err != nil {
			return false, err
		}
		for i := sz - 1; i >= 0; i-- {
			if buf[i] == '\n' && fn(pos+i+1) {
				return true, nil
			}
		}
	}
	return false, nil
}
