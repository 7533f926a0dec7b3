package jsonfilelog

import (
	"bufio"
	"os"
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
	const block = 32 * 1024
	buf := make([]byte, block)
	pos := st.Size()
	newlines := 0
	for pos > 0 {
		sz := int64(block)
		if pos < sz {
			sz = pos
		}
		pos -= sz
		if _, err := f.ReadAt(buf[:sz], pos); err != nil {
			return 0, 0, err
		}
		for i := sz - 1; i >= 0; i-- {
			if buf[i] != '\n' {
				continue
			}
			// The (n+1)th newline from the end precedes the n last lines.
			newlines++
			if newlines == n+1 {
				return pos + i + 1, n, nil
			}
		}
	}
	return 0, newlines, nil
}
