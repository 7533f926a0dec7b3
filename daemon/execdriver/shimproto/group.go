package shimproto

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"golang.org/x/sys/unix"
)

// maxCreateFds bounds the descriptors one OpCreate may carry (the first
// process's inherited sockets, for socket activation).
const maxCreateFds = 64

// maxRequestLine bounds a request line read with its descriptors.
const maxRequestLine = 64 << 10

// Listen binds the unix socket name in dir. A shim hosts several
// containers and cannot chdir into each one's directory, and sun_path
// holds 108 bytes: a longer path is bound through an O_PATH handle of
// the directory via /proc/self/fd, as Dial reaches it.
func Listen(dir, name string) (*net.UnixListener, error) {
	p := filepath.Join(dir, name)
	_ = os.Remove(p)
	if len(p) < 100 {
		return net.ListenUnix("unix", &net.UnixAddr{Name: p, Net: "unix"})
	}
	fd, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: dir, Err: err}
	}
	defer unix.Close(fd)
	l, err := net.ListenUnix("unix", &net.UnixAddr{Name: "/proc/self/fd/" + strconv.Itoa(fd) + "/" + name, Net: "unix"})
	if err != nil {
		return nil, err
	}
	// The name the listener would unlink at Close is that of a handle
	// closed by then; whoever closes it removes the path itself.
	l.SetUnlinkOnClose(false)
	return l, nil
}

// DialPath connects to the socket name in dir (see Dial).
func DialPath(dir, name string) (*net.UnixConn, error) {
	p := filepath.Join(dir, name)
	if len(p) >= 100 {
		fd, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			return nil, &os.PathError{Op: "open", Path: dir, Err: err}
		}
		defer unix.Close(fd)
		p = "/proc/self/fd/" + strconv.Itoa(fd) + "/" + name
	}
	c, err := net.DialTimeout("unix", p, 5*time.Second)
	if err != nil {
		return nil, err
	}
	return c.(*net.UnixConn), nil
}

// WriteCreate sends req as one JSON line with files attached to its
// first byte (SCM_RIGHTS): the descriptors the container's first process
// is to inherit. The receiver gets its own copies; the caller still owns
// files.
func WriteCreate(conn *net.UnixConn, req Request, files []*os.File) error {
	if len(files) > maxCreateFds {
		return fmt.Errorf("too many descriptors for a create: %d (at most %d)", len(files), maxCreateFds)
	}
	b, err := json.Marshal(req)
	if err != nil {
		return err
	}
	b = append(b, '\n')
	var oob []byte
	if len(files) > 0 {
		fds := make([]int, len(files))
		for i, f := range files {
			fds[i] = int(f.Fd())
		}
		oob = unix.UnixRights(fds...)
	}
	n, _, err := conn.WriteMsgUnix(b, oob, nil)
	if err != nil {
		return err
	}
	if n < len(b) {
		_, err = conn.Write(b[n:])
	}
	return err
}

// ReadCreate reads one request line and the descriptors sent with it
// (WriteCreate). Descriptors come back as files the caller owns; on error
// none are left open.
func ReadCreate(conn *net.UnixConn) (Request, []*os.File, error) {
	var req Request
	var files []*os.File
	fail := func(err error) (Request, []*os.File, error) {
		for _, f := range files {
			f.Close()
		}
		return req, nil, err
	}
	var line []byte
	buf := make([]byte, 4096)
	oob := make([]byte, unix.CmsgSpace(maxCreateFds*4))
	for {
		n, oobn, flags, _, err := conn.ReadMsgUnix(buf, oob)
		if oobn > 0 {
			got, perr := parseRights(oob[:oobn])
			for _, fd := range got {
				files = append(files, os.NewFile(uintptr(fd), "fd"+strconv.Itoa(fd)))
			}
			if perr != nil {
				return fail(perr)
			}
		}
		if flags&unix.MSG_CTRUNC != 0 {
			return fail(fmt.Errorf("create carried more than %d descriptors", maxCreateFds))
		}
		line = append(line, buf[:n]...)
		if i := bytes.IndexByte(line, '\n'); i >= 0 {
			if err := json.Unmarshal(line[:i], &req); err != nil {
				return fail(fmt.Errorf("bad create request: %w", err))
			}
			return req, files, nil
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			return fail(err)
		}
		if n == 0 || len(line) > maxRequestLine {
			return fail(errors.New("bad create request: no request line"))
		}
	}
}

func parseRights(oob []byte) ([]int, error) {
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return nil, err
	}
	var fds []int
	for _, m := range msgs {
		got, err := unix.ParseUnixRights(&m)
		if err != nil {
			continue
		}
		for _, fd := range got {
			unix.CloseOnExec(fd)
		}
		fds = append(fds, got...)
	}
	return fds, nil
}

// CallCreate asks the shim of groupDir to host the container of req,
// passing files along (WriteCreate), and waits for its answer until
// deadline. The error is only that of reaching the shim; what the shim
// answered (a refusal, its failure to create) is in the Response.
func CallCreate(groupDir string, req Request, files []*os.File, deadline time.Time) (Response, error) {
	var resp Response
	conn, err := DialPath(groupDir, GroupSocketName)
	if err != nil {
		return resp, err
	}
	defer conn.Close()
	_ = conn.SetDeadline(deadline)
	if err := WriteCreate(conn, req, files); err != nil {
		return resp, fmt.Errorf("sending create to shim: %w", err)
	}
	if err := ReadJSONLine(bufio.NewReader(conn), &resp); err != nil {
		return resp, fmt.Errorf("reading shim reply to create: %w", err)
	}
	return resp, nil
}

// Retire sends OpRetire to the shim of groupDir and waits for its
// acknowledgement until deadline.
func Retire(groupDir string, deadline time.Time) error {
	conn, err := DialPath(groupDir, GroupSocketName)
	if err != nil {
		return err
	}
	defer conn.Close()
	_ = conn.SetDeadline(deadline)
	if err := WriteCreate(conn, Request{Op: OpRetire}, nil); err != nil {
		return fmt.Errorf("sending retire to shim: %w", err)
	}
	var resp Response
	if err := ReadJSONLine(bufio.NewReader(conn), &resp); err != nil {
		return fmt.Errorf("reading shim reply to retire: %w", err)
	}
	return resp.Err()
}
