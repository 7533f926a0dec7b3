package distribution

import (
	"io"
	"os"
	"sync"

	"golang.org/x/sys/unix"
)

// spool carries one layer's blob from its download to its extraction.
// Downloads run ahead in parallel while layers are applied one after the
// other, base first: what arrives before its layer's turn waits in a file
// (never in memory), and the layer being applied reads the file while
// its download is still writing it, so it streams.
type spool struct {
	f *os.File

	mu   sync.Mutex
	cond *sync.Cond
	n    int64 // bytes written
	done bool
	err  error // the download's error, once done
}

func newSpool(dir string) (*spool, error) {
	f, err := os.CreateTemp(dir, "blob-")
	if err != nil {
		return nil, err
	}
	// Unlinked at once: nothing is left on disk whatever happens next.
	os.Remove(f.Name())
	s := &spool{f: f}
	s.cond = sync.NewCond(&s.mu)
	return s, nil
}

// Write appends downloaded bytes (one writer).
func (s *spool) Write(p []byte) (int, error) {
	s.mu.Lock()
	off := s.n
	s.mu.Unlock()
	n, err := s.f.WriteAt(p, off)
	s.mu.Lock()
	s.n += int64(n)
	s.cond.Broadcast()
	s.mu.Unlock()
	return n, err
}

// finish ends the download: err nil means the blob is whole and verified.
func (s *spool) finish(err error) {
	s.mu.Lock()
	s.done, s.err = true, err
	s.cond.Broadcast()
	s.mu.Unlock()
}

// wait blocks until the download ended and returns its error.
func (s *spool) wait() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for !s.done {
		s.cond.Wait()
	}
	return s.err
}

func (s *spool) close() { s.f.Close() }

// reader reads the blob from the start, waiting for bytes not yet
// downloaded; it ends with the download's error if there was one, so a
// blob failing its digest check fails the extraction reading it.
func (s *spool) reader() io.Reader { return &spoolReader{s: s} }

type spoolReader struct {
	s       *spool
	off     int64
	punched int64 // bytes at the start given back to the filesystem
}

// punchEvery is how much read blob accumulates before the reader punches
// it out of the file: the layer being extracted streams through its
// spool, and what it has read is dropped from the page cache before
// anything (a layer's commit flushing the filesystem) writes it to disk.
const punchEvery = 4 << 20

func (r *spoolReader) Read(p []byte) (int, error) {
	s := r.s
	s.mu.Lock()
	for r.off >= s.n && !s.done {
		s.cond.Wait()
	}
	avail, done, derr := s.n-r.off, s.done, s.err
	s.mu.Unlock()
	if avail <= 0 {
		if done && derr != nil {
			return 0, derr
		}
		return 0, io.EOF
	}
	if int64(len(p)) > avail {
		p = p[:avail]
	}
	n, err := s.f.ReadAt(p, r.off)
	r.off += int64(n)
	if r.off-r.punched >= punchEvery {
		// Best effort: a filesystem without hole punching keeps the bytes
		// until the spool is closed.
		_ = unix.Fallocate(int(s.f.Fd()), unix.FALLOC_FL_PUNCH_HOLE|unix.FALLOC_FL_KEEP_SIZE, r.punched, r.off-r.punched)
		r.punched = r.off
	}
	if err == io.EOF && n > 0 {
		err = nil
	}
	return n, err
}
