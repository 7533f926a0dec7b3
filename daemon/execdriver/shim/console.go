package shim

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/creack/pty"
	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/sdengine/engine/daemon/execdriver/shimproto"
)

// consolePTY is the pty behind a container's /dev/console. The shim keeps
// the slave open too, so that reading the master never fails with EIO in
// the moments when the container has closed every fd on its console.
type consolePTY struct {
	master, slave *os.File
	done          chan struct{}
	once          sync.Once
}

// setupConsolePTY opens the pty and binds its slave at /dev/console.
func (s *shim) setupConsolePTY() error {
	master, slave, err := pty.Open()
	if err != nil {
		return fmt.Errorf("console pty: %w", err)
	}
	s.consolePTY = &consolePTY{master: master, slave: slave, done: make(chan struct{})}
	s.spec.Mounts = append(s.spec.Mounts, specs.Mount{
		Destination: "/dev/console", Type: "bind", Source: slave.Name(), Options: []string{"bind", "nosuid", "noexec"},
	})
	return nil
}

// startConsole copies the console's output to the log as stdout, with the
// tty's "\r\n" turned back into "\n".
func (s *shim) startConsole() {
	c := s.consolePTY
	if c == nil {
		return
	}
	go func() {
		defer close(c.done)
		var lw io.WriteCloser
		if s.logw != nil {
			lw = s.logw.StreamWriter("stdout")
			defer lw.Close()
		}
		failures := &logFailures{stream: "console", logw: s.logw, log: s.log.Logger}
		readEach(c.master, func(p []byte) {
			out := bytes.ReplaceAll(p, []byte("\r\n"), []byte("\n"))
			if lw != nil {
				failures.write(lw, out)
			}
			s.out.send(shimproto.FrameStdout, out)
		})
	}()
}

// stopConsole ends the copy once the container is gone: closing the slave
// lets the master read what is left, then EIO.
func (s *shim) stopConsole() {
	c := s.consolePTY
	if c == nil {
		return
	}
	c.once.Do(func() {
		c.slave.Close()
		select {
		case <-c.done:
		case <-time.After(time.Second):
			s.log.Warn("shim: console output did not end; dropping the rest", "id", s.id)
		}
		c.master.Close()
	})
}
