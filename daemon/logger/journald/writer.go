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

	"github.com/sdengine/engine/daemon/logger/linebuf"
	"github.com/sdengine/engine/pkg/errdefs"
)

// socketPath is where journal.Send delivers; New checks it answers so that
// a container does not start with its output going nowhere. A variable only
// so tests can point it elsewhere.
var socketPath = "/run/systemd/journal/socket"

// maxLine (counting the newline) is where a line is cut into entries of
// their own (marked partial), as Docker does, so a process that never prints a newline
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
	return &streamWriter{l: l, prio: prio, lines: linebuf.New(maxLine)}
}

type streamWriter struct {
	mu    sync.Mutex
	l     *Logger
	prio  journal.Priority
	lines *linebuf.Splitter
}

// sendEntry sends one entry; an entry without its newline was cut at the
// limit or is the stream's unterminated end, and is marked partial.
func (s *streamWriter) sendEntry(entry []byte) error {
	line, complete := bytes.CutSuffix(entry, []byte("\n"))
	return s.l.send(line, s.prio, !complete)
}

func (s *streamWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var firstErr error
	s.lines.Split(p, func(entry []byte) {
		if err := s.sendEntry(entry); err != nil && firstErr == nil {
			firstErr = err
		}
	})
	// The whole of p is consumed either way: an entry journald refused is
	// not retried, or the container's output would be duplicated.
	return len(p), firstErr
}

// Close sends a pending unterminated last line, marked partial; it does not
// close the Logger.
func (s *streamWriter) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	var err error
	s.lines.Flush(func(entry []byte) { err = s.sendEntry(entry) })
	return err
}
