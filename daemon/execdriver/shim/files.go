package shim

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"time"

	"github.com/sdengine/engine/daemon/execdriver/shimproto"
	"github.com/sdengine/engine/pkg/errdefs"
)

// filesTimeout bounds the wait for the daemon's OpFiles request: the
// daemon sends it right after starting the shim, so a long wait means the
// daemon died meanwhile, and the shim gives up the create.
const filesTimeout = 30 * time.Second

// listen opens the control socket, relative to the state directory:
// sun_path is short.
func (s *shim) listen() error {
	_ = os.Remove(shimproto.SocketName)
	l, err := net.Listen("unix", shimproto.SocketName)
	if err != nil {
		return fmt.Errorf("control socket: %w", err)
	}
	s.listener = l
	return nil
}

// receiveFiles opens the control socket early and waits for the OpFiles
// request that carries the descriptors of the container's first process
// (shimproto/files.go). Any other request meanwhile is told to come back
// later. The socket stays open for serve.
func (s *shim) receiveFiles() ([]*os.File, error) {
	if err := s.listen(); err != nil {
		return nil, err
	}
	ul := s.listener.(*net.UnixListener)
	deadline := time.Now().Add(filesTimeout)
	for {
		_ = ul.SetDeadline(deadline)
		conn, err := ul.AcceptUnix()
		if err != nil {
			return nil, fmt.Errorf("waiting for the container's descriptors: %w", err)
		}
		_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
		req, files, err := shimproto.ReadFilesRequest(conn)
		reply := func(r shimproto.Response) { _ = shimproto.WriteJSONLine(conn, r) }
		switch {
		case err != nil:
			slog.Debug("shim: bad request while waiting for descriptors", "err", err)
		case req.Op != shimproto.OpFiles:
			reply(shimproto.ErrResponse(errdefs.Unavailable(errors.New("the container is being created"))))
		case len(files) != s.opts.Files || req.Files != s.opts.Files:
			reply(shimproto.ErrResponse(errdefs.InvalidParameter(fmt.Errorf("expected %d descriptors, got %d", s.opts.Files, len(files)))))
		default:
			reply(shimproto.Response{})
			conn.Close()
			_ = ul.SetDeadline(time.Time{})
			return files, nil
		}
		conn.Close()
		closeFiles(files)
	}
}

func closeFiles(files []*os.File) {
	for _, f := range files {
		f.Close()
	}
}
