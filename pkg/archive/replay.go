package archive

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"

	securejoin "github.com/cyphar/filepath-securejoin"
	"golang.org/x/sys/unix"
)

// The replay record lets a layer's original tar be rebuilt byte for byte
// from its extracted directory (a digest-stable `docker save`) while only
// storing headers: a sequence of frames
//
//	'R' uvarint(len) bytes        raw stream bytes (headers, padding, EOF blocks)
//	'F' uvarint(len) path uvarint(n)  n bytes read from the file at path
const (
	frameRaw  = 'R'
	frameFile = 'F'
)

type recorder struct {
	w      *bufio.Writer
	raw    []byte
	inFile bool
	path   string
	n      int64
	err    error
}

func newRecorder(w io.Writer) *recorder { return &recorder{w: bufio.NewWriter(w)} }

func (r *recorder) Write(p []byte) (int, error) {
	if r.err != nil {
		return 0, r.err
	}
	if r.inFile {
		r.n += int64(len(p))
		return len(p), nil
	}
	r.raw = append(r.raw, p...)
	if len(r.raw) >= 32<<10 {
		r.flushRaw()
	}
	return len(p), r.err
}

func (r *recorder) frame(tag byte, data []byte) {
	if r.err != nil {
		return
	}
	var buf [binary.MaxVarintLen64 + 1]byte
	buf[0] = tag
	n := binary.PutUvarint(buf[1:], uint64(len(data)))
	if _, err := r.w.Write(buf[:n+1]); err != nil {
		r.err = err
		return
	}
	if _, err := r.w.Write(data); err != nil {
		r.err = err
	}
}

func (r *recorder) flushRaw() {
	if len(r.raw) > 0 {
		r.frame(frameRaw, r.raw)
		r.raw = r.raw[:0]
	}
}

func (r *recorder) beginFile(path string) {
	r.flushRaw()
	r.inFile, r.path, r.n = true, path, 0
}

func (r *recorder) endFile() {
	r.inFile = false
	r.frame(frameFile, []byte(r.path))
	if r.err == nil {
		var buf [binary.MaxVarintLen64]byte
		n := binary.PutUvarint(buf[:], uint64(r.n))
		_, r.err = r.w.Write(buf[:n])
	}
}

func (r *recorder) close() error {
	r.flushRaw()
	if r.err != nil {
		return fmt.Errorf("write tar record: %w", r.err)
	}
	if err := r.w.Flush(); err != nil {
		return fmt.Errorf("write tar record: %w", err)
	}
	return nil
}

// Replay rebuilds the original uncompressed tar stream recorded by Apply
// (ApplyOptions.Meta) from the directory it was extracted into, writing
// it to w. Files are opened inside dir only.
func Replay(meta io.Reader, dir string, w io.Writer) error {
	br := bufio.NewReader(meta)
	// File contents are copied in pieces of replayBuf: a push reads the
	// tar through an io.Pipe, where each write is a hand-off between
	// goroutines, and io.Copy's own 32 KiB would make eight of them for
	// each of these.
	var buf []byte
	for {
		tag, err := br.ReadByte()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("read tar record: %w", err)
		}
		l, err := binary.ReadUvarint(br)
		if err != nil {
			return fmt.Errorf("read tar record: %w", err)
		}
		switch tag {
		case frameRaw:
			if _, err := io.CopyN(w, br, int64(l)); err != nil {
				return fmt.Errorf("replay tar: %w", err)
			}
		case frameFile:
			if l > 1<<16 {
				return errors.New("read tar record: corrupt file frame")
			}
			name := make([]byte, l)
			if _, err := io.ReadFull(br, name); err != nil {
				return fmt.Errorf("read tar record: %w", err)
			}
			n, err := binary.ReadUvarint(br)
			if err != nil {
				return fmt.Errorf("read tar record: %w", err)
			}
			if buf == nil && n > 0 {
				buf = make([]byte, replayBuf)
			}
			if err := replayFile(dir, string(name), int64(n), w, buf); err != nil {
				return err
			}
		default:
			return fmt.Errorf("read tar record: unknown frame %q", tag)
		}
	}
}

// replayBuf is the size of Replay's copy buffer for file contents.
const replayBuf = 256 << 10

func replayFile(dir, name string, n int64, w io.Writer, buf []byte) error {
	p, err := securejoin.SecureJoin(dir, name)
	if err != nil {
		return fmt.Errorf("replay %q: %w", name, err)
	}
	f, err := os.OpenFile(p, os.O_RDONLY|unix.O_NOFOLLOW, 0)
	if err != nil {
		return fmt.Errorf("replay %q: %w", name, err)
	}
	defer f.Close()
	if n == 0 {
		return nil
	}
	// buf is used unless w is a ReaderFrom (a file), whose own copy is
	// better still.
	written, err := io.CopyBuffer(w, io.LimitReader(f, n), buf)
	if err != nil {
		return fmt.Errorf("replay %q: %w", name, err)
	}
	if written < n {
		// The file is shorter than when the layer was recorded.
		return fmt.Errorf("replay %q: %w", name, io.ErrUnexpectedEOF)
	}
	return nil
}
