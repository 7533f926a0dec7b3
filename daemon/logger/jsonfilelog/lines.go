package jsonfilelog

import (
	"bufio"
	"os"

	"github.com/sdengine/engine/daemon/logger/logfile"
)

// lineReader returns complete '\n'-terminated lines of any length. At EOF
// the unterminated rest is kept, not returned: it is a torn entry the writer
// has not finished, completed by a later call when following.
type lineReader struct {
	br      *bufio.Reader
	partial []byte
}

// next returns the next complete line, valid until the following call.
func (lr *lineReader) next() ([]byte, error) {
	for {
		chunk, err := lr.br.ReadSlice('\n')
		if err == nil {
			if len(lr.partial) == 0 {
				return chunk, nil
			}
			lr.partial = append(lr.partial, chunk...)
			line := lr.partial
			lr.partial = lr.partial[:0]
			return line, nil
		}
		lr.partial = append(lr.partial, chunk...)
		if err != bufio.ErrBufferFull {
			return nil, err
		}
	}
}

// tailOffset scans f backwards in blocks and returns the offset at which its
// last n complete lines start, and how many complete lines (<= n) that is.
// Only the tail of the file is read, however big it is. An unterminated last
// line is not counted.
func tailOffset(f *os.File, n int) (int64, int, error) {
	st, err := f.Stat()
	if err != nil {
		return 0, 0, err
	}
	newlines := 0
	var start int64
	found, err := logfile.LineStarts(f, st.Size(), func(off int64) bool {
		// The (n+1)th newline from the end precedes the n last lines.
		newlines++
		start = off
		return newlines == n+1
	})
	if err != nil || !found {
		return 0, newlines, err
	}
	return start, n, nil
}
