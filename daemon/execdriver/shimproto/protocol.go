// Package shimproto is what the two ends of the native exec driver share:
// the daemon-side driver (daemon/execdriver/native) and the shim, one
// process per container (daemon/execdriver/shim). It holds how the daemon
// starts the shim, the control socket protocol they speak, and the files of
// a container's state directory that both read or write. Neither end
// imports the other; both import this.
package shimproto

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

	"github.com/opencontainers/cgroups"
	"golang.org/x/sys/unix"

	"github.com/sdengine/engine/daemon/execdriver"
	"github.com/sdengine/engine/pkg/errdefs"
)

// ShimCommand is os.Args[1] of a shim process: the daemon binary re-runs
// itself with it and main must hand over to shim.Main. The arguments that
// follow are the shim's group directory, the libcontainer root and the
// number of containers the shim may host at once. A shim hosts a group of
// containers: the daemon hands it each one with OpCreate on its group
// socket; every container keeps its own state directory and control
// socket (below), so that the rest of the protocol is per container.
const ShimCommand = "__shim"

// GroupSocketName is the group socket's name in a shim's group directory:
// it takes OpCreate and OpRetire only.
const GroupSocketName = "group.sock"

// ReadyFd is the pipe on which the shim tells the daemon how creation went.
const ReadyFd = 3

// The control socket protocol: the client sends one JSON request line and
// the shim answers with one JSON response line. For attach and exec the
// connection then carries frames in both directions: a kind byte, a
// big-endian uint32 length and the payload.

// Frame kinds.
const (
	FrameStdin      byte = 0 // client -> shim: data for stdin
	FrameStdout     byte = 1 // shim -> client
	FrameStderr     byte = 2 // shim -> client
	FrameCloseStdin byte = 3 // client -> shim: the client's stdin reached EOF
	FrameExit       byte = 4 // shim -> client: exec exit code (decimal text)
	FrameEnd        byte = 5 // shim -> client: the container's output ended

	maxFrame = 1 << 20
)

// Operations: a Request's Op.
const (
	OpStart      = "start"
	OpSignal     = "signal"
	OpResize     = "resize"
	OpWait       = "wait"
	OpState      = "state"
	OpAttach     = "attach"
	OpExec       = "exec"
	OpExecSignal = "exec-signal"
	OpExecResize = "exec-resize"
	// OpPause and OpResume freeze and thaw the container (its payload
	// cgroup, through libcontainer).
	OpPause  = "pause"
	OpResume = "resume"
	// OpUpdate changes the container's limits: the limits cgroup, and the
	// payload's copy of them (what the container reads).
	OpUpdate = "update"
	// OpStats reads the limits cgroup's statistics (the whole container).
	OpStats = "stats"
	// OpReopenLog makes the container's log driver write to a new file
	// at its log's path (the cri driver: the kubelet renamed the file
	// away). A driver that cannot answers NotImplemented.
	OpReopenLog = "reopen-log"
	// OpCreate, on a group socket, asks the shim to host one more
	// container (Request.Create). The request may carry descriptors for
	// the container's first process (SCM_RIGHTS, see WriteCreate). A shim
	// that is full, or has decided to exit, answers Refused, and the
	// daemon starts another shim.
	OpCreate = "create"
	// OpRetire, on a group socket, tells the shim to take no more
	// containers and to exit once those it hosts are gone (at once if
	// none): a daemon that starts again never hands containers to the
	// shims of the one before it, so it retires them.
	OpRetire = "retire"
)

// CreateRequest names the container an OpCreate asks the shim to host:
// its state directory, already holding the spec and the Options.
type CreateRequest struct {
	Dir string `json:"dir"`
	ID  string `json:"id"`
}

// Update is an OpUpdate's limits: each field given (non-nil) replaces the
// current value; a zero or negative value removes the limit where that
// means something (quota, pids).
type Update struct {
	Memory            *int64  `json:"memory,omitempty"`
	MemorySwap        *int64  `json:"memorySwap,omitempty"`
	MemoryReservation *int64  `json:"memoryReservation,omitempty"`
	CPUShares         *uint64 `json:"cpuShares,omitempty"`
	CPUQuota          *int64  `json:"cpuQuota,omitempty"`
	CPUPeriod         *uint64 `json:"cpuPeriod,omitempty"`
	CpusetCpus        *string `json:"cpusetCpus,omitempty"`
	CpusetMems        *string `json:"cpusetMems,omitempty"`
	PidsLimit         *int64  `json:"pidsLimit,omitempty"`
	BlkioWeight       *uint16 `json:"blkioWeight,omitempty"`
}

// Apply sets u's fields in r.
func (u *Update) Apply(r *cgroups.Resources) {
	set := func(dst *int64, src *int64) {
		if src != nil {
			*dst = *src
		}
	}
	set(&r.Memory, u.Memory)
	set(&r.MemorySwap, u.MemorySwap)
	set(&r.MemoryReservation, u.MemoryReservation)
	set(&r.CpuQuota, u.CPUQuota)
	if u.PidsLimit != nil {
		// -1 is "max" (unlimited); 0 would mean one pid.
		v := *u.PidsLimit
		r.PidsLimit = &v
	}
	if u.CPUShares != nil {
		r.CpuShares = *u.CPUShares
	}
	if u.CPUPeriod != nil {
		r.CpuPeriod = *u.CPUPeriod
	}
	if u.CpusetCpus != nil {
		r.CpusetCpus = *u.CpusetCpus
	}
	if u.CpusetMems != nil {
		r.CpusetMems = *u.CpusetMems
	}
	if u.BlkioWeight != nil {
		r.BlkioWeight = *u.BlkioWeight
	}
}

// Request is the one JSON line a client sends on connecting.
type Request struct {
	Op     string         `json:"op"`
	Signal int            `json:"signal,omitempty"`
	Height uint16         `json:"height,omitempty"`
	Width  uint16         `json:"width,omitempty"`
	Stdin  bool           `json:"stdin,omitempty"`
	Exec   *ExecRequest   `json:"exec,omitempty"`
	ExecID string         `json:"execId,omitempty"`
	Update *Update        `json:"update,omitempty"`
	Create *CreateRequest `json:"create,omitempty"`
}

// ExecRequest describes the process of an OpExec request.
type ExecRequest struct {
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

// Response is the shim's one JSON line in answer to a Request, and the
// report on the ready pipe.
type Response struct {
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
	Stats     *cgroups.Stats         `json:"stats,omitempty"`
	// Refused: a shim that is full or exiting did not take the container
	// of an OpCreate (nothing of it was touched); ask another shim.
	Refused bool `json:"refused,omitempty"`
}

// Error classes as sent over the wire.
const (
	classInvalid     = "invalid"
	classConflict    = "conflict"
	classNotFound    = "notfound"
	classUnavailable = "unavailable"
	classNotImpl     = "notimplemented"
)

// ErrResponse reports err, with its class and a StartError's exit code,
// which Err restores on the other end.
func ErrResponse(err error) Response {
	r := Response{Error: err.Error()}
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
	case errdefs.ClassNotImplemented:
		r.Class = classNotImpl
	}
	return r
}

// Err turns a response back into a classified error (nil on success).
func (r *Response) Err() error {
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
	case classNotImpl:
		return errdefs.NotImplemented(e)
	}
	return e
}

// WriteJSONLine sends v as one JSON line.
func WriteJSONLine(w io.Writer, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

// ReadJSONLine reads one JSON line into v.
func ReadJSONLine(r *bufio.Reader, v any) error {
	line, err := r.ReadBytes('\n')
	if err != nil {
		if errors.Is(err, io.EOF) && len(line) == 0 {
			return io.ErrUnexpectedEOF
		}
		return err
	}
	return json.Unmarshal(line, v)
}

// FrameWriter serialises frames from several goroutines onto one conn.
type FrameWriter struct {
	mu sync.Mutex
	w  net.Conn
}

// NewFrameWriter returns a FrameWriter writing on conn.
func NewFrameWriter(conn net.Conn) *FrameWriter { return &FrameWriter{w: conn} }

// WriteTimeout bounds how long a stuck client can stall output delivery.
const WriteTimeout = 30 * time.Second

// WriteFrame sends p as frames of the given kind (split at the maximum
// frame size), none interleaved with another writer's.
func (f *FrameWriter) WriteFrame(kind byte, p []byte) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	for {
		n := min(len(p), maxFrame)
		if err := f.WriteOneLocked(kind, p[:n]); err != nil {
			return err
		}
		p = p[n:]
		if len(p) == 0 {
			return nil
		}
	}
}

// Lock holds off every other writer of f, so that its holder can write on
// the connection itself before the frames (the shim's answer to attach);
// WriteOneLocked writes frames meanwhile. Unlock ends it.
func (f *FrameWriter) Lock() { f.mu.Lock() }

// Unlock lets the other writers of f go on.
func (f *FrameWriter) Unlock() { f.mu.Unlock() }

// WriteOneLocked writes one frame; p is at most the maximum frame size and
// the caller holds f's lock.
func (f *FrameWriter) WriteOneLocked(kind byte, p []byte) error {
	hdr := make([]byte, 5, 5+len(p))
	hdr[0] = kind
	binary.BigEndian.PutUint32(hdr[1:], uint32(len(p)))
	_ = f.w.SetWriteDeadline(time.Now().Add(WriteTimeout))
	_, err := f.w.Write(append(hdr, p...))
	return err
}

// ReadFrame reads one frame: its kind and payload.
func ReadFrame(r *bufio.Reader) (byte, []byte, error) {
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

// SocketName is the control socket's name inside the container's state
// directory; the shim binds it relative to its working directory.
const SocketName = "shim.sock"

// Dial connects to the shim of the container whose state is in dir.
// sun_path holds 108 bytes; longer paths are reached through an O_PATH
// handle of the directory via /proc/self/fd.
func Dial(dir string) (net.Conn, error) {
	p := filepath.Join(dir, SocketName)
	if len(p) < 100 {
		return net.DialTimeout("unix", p, 5*time.Second)
	}
	fd, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: dir, Err: err}
	}
	defer unix.Close(fd)
	return net.DialTimeout("unix", "/proc/self/fd/"+strconv.Itoa(fd)+"/"+SocketName, 5*time.Second)
}

// Call sends one request and reads the response; the returned reader and
// conn stay usable for frames when the response carried no error.
func Call(dir string, req Request) (net.Conn, *bufio.Reader, Response, error) {
	var resp Response
	conn, err := Dial(dir)
	if err != nil {
		return nil, nil, resp, err
	}
	if err := WriteJSONLine(conn, req); err != nil {
		conn.Close()
		return nil, nil, resp, fmt.Errorf("sending %s to shim: %w", req.Op, err)
	}
	br := bufio.NewReader(conn)
	if err := ReadJSONLine(br, &resp); err != nil {
		conn.Close()
		return nil, nil, resp, fmt.Errorf("reading shim reply to %s: %w", req.Op, err)
	}
	if err := resp.Err(); err != nil {
		conn.Close()
		return nil, nil, resp, err
	}
	return conn, br, resp, nil
}
