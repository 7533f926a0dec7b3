package daemon

import (
	"fmt"
	"io"
	"sync"

	"github.com/moby/term"

	"github.com/sdengine/engine/pkg/errdefs"
)

// defaultDetachKeys is Docker's detach sequence.
const defaultDetachKeys = "ctrl-p,ctrl-q"

// parseDetachKeys reads an attach's detachKeys ("" is Docker's default).
func parseDetachKeys(keys string) ([]byte, error) {
	if keys == "" {
		keys = defaultDetachKeys
	}
	b, err := term.ToBytes(keys)
	if err != nil {
		return nil, errdefs.InvalidParameter(fmt.Errorf("Invalid detach keys (%s) provided", keys))
	}
	return b, nil
}

// detachReader passes a client's stdin through until the detach sequence:
// bytes that start the sequence are held back until it is complete (then
// dropped, and onDetach called) or broken (then passed on). After the
// sequence it blocks until release is closed, so that the container's
// stdin is not closed by a detach: only the attachment ends.
type detachReader struct {
	src      io.Reader
	keys     []byte
	onDetach func()
	release  <-chan struct{}

	held    []byte // a prefix of keys read but not passed on
	pending []byte // bytes to hand out before reading more
	err     error  // the source's error, once pending is out
	// detached is set once the sequence was read.
	detached bool
	once     sync.Once
}

func (r *detachReader) Read(p []byte) (int, error) {
	for len(r.pending) == 0 {
		if r.detached {
			// What came before the sequence was handed on first.
			r.once.Do(r.onDetach)
			<-r.release
			return 0, io.EOF
		}
		buf := make([]byte, len(p))
		n, err := r.src.Read(buf)
		for _, b := range buf[:n] {
			if b == r.keys[len(r.held)] {
				r.held = append(r.held, b)
				if len(r.held) == len(r.keys) {
					// What follows the sequence is not the container's.
					r.held = nil
					r.detached = true
					break
				}
				continue
			}
			r.pending = append(r.pending, r.held...)
			r.held = r.held[:0]
			if b == r.keys[0] {
				r.held = append(r.held, b)
				continue
			}
			r.pending = append(r.pending, b)
		}
		if err != nil && !r.detached {
			// The client's stdin ended inside a broken sequence.
			r.pending = append(r.pending, r.held...)
			r.held = nil
			if len(r.pending) == 0 {
				return 0, err
			}
			r.err = err
			break
		}
	}
	n := copy(p, r.pending)
	r.pending = r.pending[n:]
	if len(r.pending) == 0 && r.err != nil {
		return n, r.err
	}
	return n, nil
}
