package native

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sdengine/engine/daemon/execdriver"
	"github.com/sdengine/engine/pkg/errdefs"
)

// The control socket protocol: the client sends one JSON request line and
// the shim answers with one JSON response line. For attach and exec the
// connection then carries frames in both directions: a kind byte, a
// big-endian uint32 length and the payload.

const (
	frameStdin      byte = 0 // client -> shim: data for stdin
	frameStdout     byte = 1 // shim -> client
	frameStderr     byte = 2 // shim -> client
	frameCloseStdin byte = 3 // client -> shim: the client's stdin reached EOF
	frameExit       byte = 4 // shim -> client: exec exit code (decimal text)
	frameEnd        byte = 5 // shim -> client: the container's output ended

	maxFrame = 1 << 20
)

const (
	opStart      = "start"
	opSignal     = "signal"
	opResize     = "resize"
	opWait       = "wait"
	opState      = "state"
	opAttach     = "attach"
	opExec       = "exec"
	opExecSignal = "exec-signal"
	opExecResize = "exec-resize"
)

type request struct {
	Op     string       `json:"op"`
	Signal int          `json:"signal,omitempty"`
	Height uint16       `json:"height,omitempty"`
	Width  uint16       `json:"width,omitempty"`
	Stdin  bool         `json:"stdin,omitempty"`
	Exec   *execRequest `json:"exec,omitempty"`
	ExecID string       `json:"execId,omitempty"`
}

type execRequest struct {
	Args           []string `json:"args"`
	Env            []string `json:"env,omitempty"`
	Cwd            string   `json:"cwd,omitempty"`
	UID            uint32   `json:"uid"`
	GID            uint32   `json:"gid"`
	AdditionalGids []uint32 `json:"additionalGids,omitempty"`
	Tty            bool     `json:"tty,omitempty"`
	Privileged     bool     `json:"privileged,omitempty"`
	Height         uint16   `json:"height,omitempty"`
	Width          uint16   `json:"width,omitempty"`
	Stdin          bool     `json:"stdin,omitempty"`
}

type response struct {
	Error string `json:"error,omitempty"`
	Class string `json:"class,omitempty"`
	// StartCode is a failed start's exit code (StartError).
	StartCode int                    `json:"startCode,omitempty"`
	Pid       int                    `json:"pid,omitempty"`
	ExecID    string                 `json:"execId,omitempty"`
	Started   bool                   `json:"started,omitempty"`
	Tty       bool                   `json:"tty,omitempty"`
	OpenStdin bool                   `json:"openStdin,omitempty"`
	StdinOnce bool                   `json:"stdinOnce,omitempty"`
	Exit      *execdriver.ExitStatus `json:"exit,omitempty"`
}

// Error classes as sent over the wire.
const (
	classInvalid     = "invalid"
	classConflict    = "conflict"
	classNotFound    = "notfound"
	classUnavailable = "unavailable"
)

func errResponse(err error) response {
	r := response{Error: err.Error()}
	var se *execdriver.StartError
	if errors.As(err, &se) {
		r.StartCode = se.Code
	}
	switch errdefs.ClassOf(err) {
	case errdefs.ClassInvalidParameter:
		r.Class = classInvalid
	case errdefs.ClassConflict:
		r.Class = classConflict
	case errdefs.ClassNotFound:
		r.Class = classNotFound
	case errdefs.ClassUnavailable:
		r.Class = classUnavailable
	}
	return r
}

// err turns a response back into a classified error (nil on success).
func (r *response) err() error {
	if r.Error == "" {
		return nil
	}
	e := errors.New(r.Error)
	if r.StartCode != 0 {
		e = &execdriver.StartError{Code: r.StartCode, Err: e}
	}
	switch r.Class {
	case classInvalid:
		return errdefs.InvalidParameter(e)
	case classConflict:
		return errdefs.Conflict(e)
	case classNotFound:
		return errdefs.NotFound(e)
	case classUnavailable:
		return errdefs.Unavailable(e)
	}
	return e
}

func writeJSONLine(w io.Writer, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

func readJSONLine(r *bufio.Reader, v any) error {
	line, err := r.ReadBytes('\n')
	if err != nil {
		if errors.Is(err, io.EOF) && len(line) == 0 {
			return io.ErrUnexpectedEOF
		}
		return err
	}
	return json.Unmarshal(line, v)
}

// frameWriter serialises frames from several goroutines onto one conn.
type frameWriter struct {
	mu sync.Mutex
	w  net.Conn
}

// writeTimeout bounds how long a stuck client can stall output delivery.
const writeTimeout = 30 * time.Second

func (f *frameWriter) write(kind byte, p []byte) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	for {
		n := min(len(p), maxFrame)
		if err := f.writeOne(kind, p[:n]); err != nil {
			return err
		}
		p = p[n:]
		if len(p) == 0 {
			return nil
		}
	}
}

func (f *frameWriter) writeOne(kind byte, p []byte) error {
	hdr := make([]byte, 5, 5+len(p))
	hdr[0] = kind
	binary.BigEndian.PutUint32(hdr[1:], uint32(len(p)))
	_ = f.w.SetWriteDeadline(time.Now().Add(writeTimeout))
	_, err := f.w.Write(append(hdr, p...))
	return err
}

func readFrame(r *bufio.Reader) (byte, []byte, error) {
	var hdr [5]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return 0, nil, err
	}
	n := binary.BigEndian.Uint32(hdr[1:])
	if n > maxFrame {
		return 0, nil, fmt.Errorf("frame too large: %d bytes", n)
	}
	p := make([]byte, n)
	if _, err := io.ReadFull(r, p); err != nil {
		return 0, nil, err
	}
	return hdr[0], p, nil
}

// socketName is the control socket's name inside the container's state
// directory; the shim binds it relative to its working directory.
const socketName = "shim.sock"

// dialShim connects to the shim of the container whose state is in dir.
// sun_path holds 108 bytes; longer paths are reached through an O_PATH
// handle of the directory via /proc/self/fd.
func dialShim(dir string) (net.Conn, error) {
	p := filepath.Join(dir, socketName)
	if len(p) < 100 {
		return net.DialTimeout("unix", p, 5*time.Second)
	}
	fd, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: dir, Err: err}
	}
	defer unix.Close(fd)
	return net.DialTimeout("unix", "/proc/self/fd/"+strconv.Itoa(fd)+"/"+socketName, 5*time.Second)
}

// call sends one request and reads the response; the returned reader and
// conn stay usable for frames when the response carried no error.
func call(dir string, req request) (net.Conn, *bufio.Reader, response, error) {
	var resp response
	conn, err := dialShim(dir)
	if err != nil {
		return nil, nil, resp, err
	}
	if err := writeJSONLine(conn, req); err != nil {
		conn.Close()
		return nil, nil, resp, fmt.Errorf("sending %s to shim: %w", req.Op, err)
	}
	br := bufio.NewReader(conn)
	if err := readJSONLine(br, &resp); err != nil {
		conn.Close()
		return nil, nil, resp, fmt.Errorf("reading shim reply to %s: %w", req.Op, err)
	}
	if err := resp.err(); err != nil {
		conn.Close()
		return nil, nil, resp, err
	}
	return conn, br, resp, nil
}
