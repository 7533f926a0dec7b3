// Package linebuf cuts a container's output into log entries, the way
// every log driver needs it: one entry per line, a line longer than the
// limit cut into entries of its own, and an unterminated tail carried over
// to the next write.
package linebuf

import "bytes"

// Splitter holds the unterminated tail between writes. Not safe for
// concurrent use: the log drivers lock around it.
type Splitter struct {
	max     int
	pending []byte
}

// New returns a splitter whose entries are at most max bytes long,
// counting the newline.
func New(max int) *Splitter { return &Splitter{max: max} }

// Split feeds p and calls emit for each entry. An entry ends with '\n'
// exactly when it is a whole line; one cut at the limit does not. emit
// must not keep the slice.
func (s *Splitter) Split(p []byte, emit func(entry []byte)) {
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			room := s.max - len(s.pending)
			if len(p) < room {
				s.pending = append(s.pending, p...)
				return
			}
			s.pending = append(s.pending, p[:room]...)
			p = p[room:]
			emit(s.pending)
			s.pending = s.pending[:0]
			continue
		}
		line := p[:i+1]
		p = p[i+1:]
		if len(s.pending) == 0 && len(line) <= s.max {
			emit(line) // the common case: no copy
			continue
		}
		s.pending = append(s.pending, line...)
		for len(s.pending) > s.max {
			emit(s.pending[:s.max])
			s.pending = s.pending[s.max:]
		}
		emit(s.pending)
		s.pending = s.pending[:0]
	}
}

// Flush emits the unterminated tail, if any (at the end of the stream).
func (s *Splitter) Flush(emit func(entry []byte)) {
	if len(s.pending) > 0 {
		emit(s.pending)
		s.pending = s.pending[:0]
	}
}
