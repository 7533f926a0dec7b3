package shimproto

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"time"

	"golang.org/x/sys/unix"
)

// Passing descriptors to the container's first process (socket
// activation, --preserve-fds) is part of creating it: when Options.Files
// is not zero, the shim opens its control socket before it creates the
// container and waits for one OpFiles request, whose JSON line carries
// exactly that many descriptors as SCM_RIGHTS. They become the process's
// fds 3, 4, ... (libcontainer's Process.ExtraFiles), and the shim closes
// its copies once the process holds them. Nothing else of the shim's is
// inherited: the shim's own descriptors are close-on-exec.
//
// The descriptors travel on the control socket, not as the shim process's
// inherited files, so that a shim that hosts more than one container can
// receive them for the one being created.

// OpFiles is the request that hands over the descriptors of a container
// being created; Request.Files is their number.
const OpFiles = "files"

// MaxFiles is the most descriptors one request can carry (the kernel's
// SCM_MAX_FD).
const MaxFiles = 253

// SendFiles connects to the shim of the container whose state is in dir
// and hands it files, retrying the connection until the shim listens or
// ctx is done (the shim opens its socket a moment after it starts).
func SendFiles(ctx context.Context, dir string, files []*os.File) error {
	if len(files) == 0 || len(files) > MaxFiles {
		return fmt.Errorf("cannot pass %d descriptors (1 to %d)", len(files), MaxFiles)
	}
	var conn net.Conn
	for {
		var err error
		conn, err = Dial(dir)
		if err == nil {
			break
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("connecting to the shim to pass descriptors: %w (%w)", ctx.Err(), err)
		case <-time.After(5 * time.Millisecond):
		}
	}
	defer conn.Close()
	uc, ok := conn.(*net.UnixConn)
	if !ok {
		return errors.New("the shim's control socket is not a unix socket")
	}
	if dl, ok := ctx.Deadline(); ok {
		_ = uc.SetDeadline(dl)
	}
	line, err := json.Marshal(Request{Op: OpFiles, Files: len(files)})
	if err != nil {
		return err
	}
	fds := make([]int, len(files))
	for i, f := range files {
		fds[i] = int(f.Fd())
	}
	if _, _, err := uc.WriteMsgUnix(append(line, '\n'), unix.UnixRights(fds...), nil); err != nil {
		return fmt.Errorf("passing descriptors to the shim: %w", err)
	}
	var resp Response
	if err := ReadJSONLine(bufio.NewReader(uc), &resp); err != nil {
		return fmt.Errorf("reading the shim's answer to %s: %w", OpFiles, err)
	}
	return resp.Err()
}

// ReadFilesRequest reads one request line from conn together with the
// descriptors that came with it (received close-on-exec). The descriptors
// are returned whatever the request says; the caller checks the count and
// closes them when it does not keep them.
func ReadFilesRequest(conn *net.UnixConn) (Request, []*os.File, error) {
	var req Request
	var files []*os.File
	var line []byte
	buf := make([]byte, 4096)
	oob := make([]byte, unix.CmsgSpace(MaxFiles*4))
	for !bytes.Contains(line, []byte{'\n'}) {
		if len(line) > 64<<10 {
			return req, files, errors.New("request line too long")
		}
		n, oobn, _, _, err := conn.ReadMsgUnix(buf, oob)
		if oobn > 0 {
			got, perr := parseRights(oob[:oobn])
			files = append(files, got...)
			if perr != nil {
				return req, files, perr
			}
		}
		line = append(line, buf[:n]...)
		if err != nil {
			return req, files, err
		}
		if n == 0 {
			return req, files, errors.New("connection closed before the request")
		}
	}
	line, _, _ = bytes.Cut(line, []byte{'\n'})
	if err := json.Unmarshal(line, &req); err != nil {
		return req, files, fmt.Errorf("bad request: %w", err)
	}
	return req, files, nil
}

// parseRights turns the SCM_RIGHTS messages in oob into files.
func parseRights(oob []byte) ([]*os.File, error) {
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return nil, fmt.Errorf("parsing control messages: %w", err)
	}
	var files []*os.File
	for _, m := range msgs {
		fds, err := unix.ParseUnixRights(&m)
		if err != nil {
			continue // not SCM_RIGHTS (credentials, say): nothing to own
		}
		for _, fd := range fds {
			files = append(files, os.NewFile(uintptr(fd), "passed-fd-"+strconv.Itoa(fd)))
		}
	}
	return files, nil
}
