// Package logfile is what the file log drivers (json-file, local) share:
// a writer that appends whole entries to a size-rotated file, and a reader
// that delivers them back across rotations, tail and follow included. The
// drivers bring their own encoding; this package never looks inside an
// entry.
package logfile

import (
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strconv"
	"sync"
	"time"
)

// Format is what the Writer needs to know of a driver's file format.
type Format struct {
	// Name names the driver in messages.
	Name string
	// WholeEnd returns the offset just past the last whole entry among
	// the first size bytes of f.
	WholeEnd func(f io.ReaderAt, size int64) (int64, error)
	// Mend, if set, ends torn bytes that could not be cut, so that the
	// next entry stays whole and the fragment is something readers skip
	// (json-file: a newline). Without it entries are dropped until the cut
	// succeeds, since the format has no way to step over a fragment.
	Mend []byte
}

// Config is the rotation a driver's options ask for.
type Config struct {
	MaxSize  int64 // bytes per file; 0: no rotation
	MaxFile  int   // files kept, the current one included
	Compress bool  // gzip rotated files (path.N.gz)
}

// Writer appends entries to a log file. It is safe for concurrent use.
//
// The file only ever holds whole entries: a write that fails part-way (a
// full disk) is cut back to the last whole entry, and the entries that did
// not make it are counted as dropped (Dropped). A later entry is thus
// never appended to part of an earlier one.
type Writer struct {
	mu      sync.Mutex
	path    string
	cfg     Config
	format  Format
	f       File
	size    int64 // bytes in the current file: where its last whole entry ends
	last    time.Time
	closed  bool
	torn    bool // the file has bytes past size (a cut that failed) to remove
	dropped uint64
	// compressing is closed when the compression of the last rotated file
	// is over; a rotation waits for it, so that names stay settled.
	compressing chan struct{}
}

// File is what Writer needs of its *os.File; tests inject faults.
type File interface {
	Write(p []byte) (int, error)
	Truncate(size int64) error
	Stat() (os.FileInfo, error)
	Close() error
}

// Open opens (appending to) or creates the log at path. Appending
// matters: after a daemon or shim restart the container's earlier output
// must stay.
func Open(path string, cfg Config, format Format) (*Writer, error) {
	w := &Writer{path: path, cfg: cfg, format: format}
	if err := w.open(); err != nil {
		return nil, err
	}
	return w, nil
}

// WrapFile replaces the open file by what wrap makes of it: tests use it
// to make writes fail as on a full disk.
func (w *Writer) WrapFile(wrap func(File) File) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.f = wrap(w.f)
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
	end, err := w.format.WholeEnd(f, st.Size())
	if err != nil {
		f.Close()
		return fmt.Errorf("read log file: %w", err)
	}
	w.f, w.size, w.torn = f, end, end < st.Size()
	if w.torn {
		slog.Warn(w.format.Name+" log ends in a torn entry; cutting it", "path", w.path, "bytes", st.Size()-end)
		w.cutTorn()
	}
	return nil
}

// cutTorn removes what lies past the last whole entry.
func (w *Writer) cutTorn() {
	if err := w.f.Truncate(w.size); err != nil {
		slog.Warn("cutting a torn "+w.format.Name+" log entry", "path", w.path, "err", err)
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

// Write appends encoded entries; ends[i] is where entry i ends in buf, and
// last is the time of the last one (kept in a compressed file's header).
// Batching a whole chunk of output into one write(2) is what makes the
// drivers' stream writers fast.
func (w *Writer) Write(buf []byte, ends []int, last time.Time) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return errors.New("log writer is closed")
	}
	if w.torn {
		if err := w.mendTorn(); err != nil {
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
		if w.cfg.MaxSize > 0 {
			// Never split an entry across files; a single entry larger
			// than max-size gets a file of its own.
			if w.size > 0 && w.size+int64(ends[i]-start) > w.cfg.MaxSize {
				if err := w.rotate(); err != nil {
					w.dropped += uint64(len(ends) - i)
					return err
				}
			}
			j = i
			for j+1 < len(ends) && w.size+int64(ends[j+1]-start) <= w.cfg.MaxSize {
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
			if i > 0 {
				w.last = last
			}
			return fmt.Errorf("write log: %w", err)
		}
		w.size += int64(n)
		w.last = last
		i = j + 1
	}
	return nil
}

// mendTorn deals with bytes a failed cut left past the last whole entry:
// cut them now, or else end them with the format's Mend.
func (w *Writer) mendTorn() error {
	if w.cutTorn(); !w.torn {
		return nil
	}
	if w.format.Mend == nil {
		return errors.New("a torn entry could not be cut")
	}
	if _, err := w.f.Write(w.format.Mend); err != nil {
		return err
	}
	st, err := w.f.Stat()
	if err != nil {
		return err
	}
	w.size, w.torn = st.Size(), false
	return nil
}

// RotatedName is the name of the i-th newest rotated file (1 = newest).
func RotatedName(path string, i int) string { return path + "." + strconv.Itoa(i) }

// rotate shifts path -> path.1 -> ... (each either plain or .gz) and
// starts a fresh file. The new file always gets a new inode (even with
// max-file=1, where the old one is just removed) so that followers can
// notice the switch by comparing inodes.
func (w *Writer) rotate() error {
	if err := w.f.Close(); err != nil {
		slog.Warn("closing rotated log", "path", w.path, "err", err)
	}
	if w.cfg.MaxFile <= 1 {
		if err := os.Remove(w.path); err != nil && !os.IsNotExist(err) {
			return fmt.Errorf("rotate log: %w", err)
		}
		return w.open()
	}
	w.waitCompress()
	oldest := RotatedName(w.path, w.cfg.MaxFile-1)
	for _, name := range []string{oldest, oldest + ".gz"} {
		if err := os.Remove(name); err != nil && !os.IsNotExist(err) {
			return fmt.Errorf("rotate log: %w", err)
		}
	}
	// A rotated file whose compression failed stays plain: both forms
	// move along.
	for i := w.cfg.MaxFile - 2; i >= 1; i-- {
		for _, ext := range []string{"", ".gz"} {
			if err := os.Rename(RotatedName(w.path, i)+ext, RotatedName(w.path, i+1)+ext); err != nil && !os.IsNotExist(err) {
				return fmt.Errorf("rotate log: %w", err)
			}
		}
	}
	if err := os.Rename(w.path, RotatedName(w.path, 1)); err != nil {
		return fmt.Errorf("rotate log: %w", err)
	}
	if err := w.open(); err != nil {
		return err
	}
	if w.cfg.Compress {
		// In the background: a container's output must not wait for
		// gzip. Readers prefer the plain file while it exists.
		done := make(chan struct{})
		w.compressing = done
		go func(name string, last time.Time) {
			defer close(done)
			if err := compressFile(name, last); err != nil {
				slog.Warn("compressing rotated log; it stays uncompressed", "path", name, "err", err)
			}
		}(RotatedName(w.path, 1), w.last)
	}
	return nil
}

func (w *Writer) waitCompress() {
	if w.compressing != nil {
		<-w.compressing
		w.compressing = nil
	}
}

// gzipExtra is the gzip header's extra field Docker writes and reads: the
// time of the file's last entry, which lets a reader with --since skip a
// whole file without inflating it.
type gzipExtra struct {
	LastTime time.Time `json:"lastTime,omitempty"`
}

// compressFile writes name.gz and then removes name; on failure (a full
// disk) it removes the partial name.gz instead, so a reader always finds
// one whole copy.
func compressFile(name string, last time.Time) (retErr error) {
	in, err := os.Open(name)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(name+".gz", os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o640)
	if err != nil {
		return err
	}
	defer func() {
		if err := out.Close(); err != nil && retErr == nil {
			retErr = err
		}
		if retErr != nil {
			os.Remove(name + ".gz")
			return
		}
		retErr = os.Remove(name)
	}()
	zw := gzip.NewWriter(out)
	if !last.IsZero() {
		if zw.Header.Extra, err = json.Marshal(gzipExtra{LastTime: last}); err != nil {
			return err
		}
	}
	if _, err := io.Copy(zw, in); err != nil {
		return err
	}
	if err := zw.Close(); err != nil {
		return err
	}
	return out.Sync()
}

// Close closes the file, after the compression of the last rotated file
// is done. Later writes fail.
func (w *Writer) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return nil
	}
	w.closed = true
	w.waitCompress()
	return w.f.Close()
}
