package journald

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"

	"github.com/coreos/go-systemd/v22/journal"

	"github.com/sdengine/engine/pkg/errdefs"
)

// socketPath is where journal.Send delivers; New checks it answers so that
// a container does not start with its output going nowhere. A variable only
// so tests can point it elsewhere.
var socketPath = "/run/systemd/journal/socket"

// maxLine is where a line without '\n' is cut into an entry of its own
// (marked partial), as Docker does, so a process that never prints a newline
// cannot make us buffer without bound.
const maxLine = 16 * 1024

// Field names and values of the entries.
const (
	fieldPartial   = "CONTAINER_PARTIAL_MESSAGE"
	fieldIDFull    = "CONTAINER_ID_FULL"
	priorityStdout = journal.PriInfo // 6
	priorityStderr = journal.PriErr  // 3
)

// Logger sends a container's output to journald. It is safe for concurrent
// use: stdout and stderr copiers each take their own StreamWriter.
type Logger struct {
	vars    map[string]string // fields every entry carries
	partial map[string]string // vars plus the partial marker
	closed  atomic.Bool
}

// New checks journald is reachable and prepares the fields of c's entries.
func New(c Container, opts map[string]string) (*Logger, error) {
	cfg, err := parseOptions(opts)
	if err != nil {
		return nil, err
	}
	tag, err := cfg.renderTag(c)
	if err != nil {
		return nil, err
	}
	if err := checkSocket(); err != nil {
		return nil, err
	}
	vars := map[string]string{}
	// Extra attributes go in first so that they can never replace the
	// fields `docker logs` selects and decodes entries by.
	for k, v := range cfg.extraAttributes(c) {
		if name := fieldName(k); name != "" {
			vars[name] = v
		}
	}
	vars["CONTAINER_ID"] = shortID(c.ID)
	vars[fieldIDFull] = c.ID
	vars["CONTAINER_NAME"] = c.Name
	vars["CONTAINER_TAG"] = tag
	vars["SYSLOG_IDENTIFIER"] = tag
	vars["IMAGE_NAME"] = c.ImageName
	delete(vars, "PRIORITY") // journal.Send sets it from the stream
	delete(vars, "MESSAGE")
	partial := make(map[string]string, len(vars)+1)
	for k, v := range vars {
		partial[k] = v
	}
	partial[fieldPartial] = "true"
	return &Logger{vars: vars, partial: partial}, nil
}

// checkSocket fails unless something listens on journald's native socket.
func checkSocket() error {
	conn, err := net.Dial("unixgram", socketPath)
	if err != nil {
		return errdefs.Unavailable(fmt.Errorf("journald is not enabled on this host (%s): %w", socketPath, err))
	}
	conn.Close()
	return nil
}

// Close makes later writes fail; there is nothing to flush, every entry is
// sent when written.
func (l *Logger) Close() error {
	l.closed.Store(true)
	return nil
}

// send writes one entry. line carries no trailing newline.
func (l *Logger) send(line []byte, prio journal.Priority, partial bool) error {
	if l.closed.Load() {
		return errors.New("journald log is closed")
	}
	vars := l.vars
	if partial {
		vars = l.partial
	}
	if err := journal.Send(string(line), prio, vars); err != nil {
		return fmt.Errorf("journald: send: %w", err)
	}
	return nil
}

// StreamWriter returns a writer turning a byte stream ("stdout" or
// "stderr") into one entry per line.
func (l *Logger) StreamWriter(stream string) io.WriteCloser {
	prio := priorityStdout
	if stream == "stderr" {
		prio = priorityStderr
	}
	return &streamWriter{l: l, prio: prio}
}

type streamWriter struct {
	mu      sync.Mutex
	l       *Logger
	prio    journal.Priority
	pending []byte // unterminated line carried over between writes
}

func (s *streamWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := len(p)
	var firstErr error
	keep := func(err error) {
		if firstErr == nil {
			firstErr = err
		}
	}
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			room := maxLine - len(s.pending)
			if len(p) < room {
				s.pending = append(s.pending, p...)
				break
			}
			s.pending = append(s.pending, p[:room]...)
			p = p[room:]
			keep(s.l.send(s.pending, s.prio, true))
			s.pending = s.pending[:0]
			continue
		}
		line := p[:i]
		p = p[i+1:]
		if len(s.pending) == 0 && len(line) <= maxLine {
			keep(s.l.send(line, s.prio, false)) // common case: no copy
			continue
		}
		s.pending = append(s.pending, line...)
		for len(s.pending) > maxLine {
			keep(s.l.send(s.pending[:maxLine], s.prio, true))
			s.pending = s.pending[maxLine:]
		}
		keep(s.l.send(s.pending, s.prio, false))
		s.pending = s.pending[:0]
	}
	// The whole of p is consumed either way: an entry journald refused is
	// not retried, or the container's output would be duplicated.
	if firstErr != nil {
		return n, firstErr
	}
	return n, nil
}

// Close sends a pending unterminated last line, marked partial; it does not
// close the Logger.
func (s *streamWriter) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.pending) == 0 {
		return nil
	}
	err := s.l.send(s.pending, s.prio, true)
	s.pending = s.pending[:0]
	return err
}
