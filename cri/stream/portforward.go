package stream

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	goruntime "runtime"
	"strconv"
	"time"

	"golang.org/x/sys/unix"

	// A thread left in another namespace ends with its goroutine.
	_ "github.com/sdengine/engine/pkg/mainthread"
)

// dialTimeout bounds the connect to a pod's port.
const dialTimeout = 10 * time.Second

// PortForward connects stream to 127.0.0.1:port in the pod's network
// namespace (the pod's loopback, as the kubelet's port-forward does), and
// copies both ways until the pod's side ends.
func (r *runtime) PortForward(ctx context.Context, podSandboxID string, port int32, stream io.ReadWriteCloser) error {
	path, err := r.netns(podSandboxID)
	if err != nil {
		return fmt.Errorf("port-forward: %w", err)
	}
	conn, err := dialIn(ctx, path, net.JoinHostPort("127.0.0.1", strconv.Itoa(int(port))))
	if err != nil {
		return fmt.Errorf("port-forward to pod %s port %d: %w", podSandboxID, port, err)
	}
	return splice(conn, stream)
}

// dialIn dials a TCP address from inside the network namespace at path
// ("" dials from the host's, for host-network pods).
//
// A socket belongs to the namespace it was created in, whichever thread
// uses it later; so only the socket's creation has to happen in the pod.
// That is done on a thread of its own: locked, moved into the pod, and
// never unlocked, so that Go ends the thread with the goroutine instead
// of running other goroutines in the pod's namespace.
func dialIn(ctx context.Context, path, addr string) (net.Conn, error) {
	d := net.Dialer{Timeout: dialTimeout}
	if path == "" {
		return d.DialContext(ctx, "tcp", addr)
	}
	ns, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open netns: %w", err)
	}
	defer ns.Close()
	type result struct {
		c   net.Conn
		err error
	}
	res := make(chan result, 1)
	go func() {
		goruntime.LockOSThread()
		if err := unix.Setns(int(ns.Fd()), unix.CLONE_NEWNET); err != nil {
			res <- result{err: fmt.Errorf("enter netns %s: %w", path, err)}
			return
		}
		// The address is a literal: no resolver runs (it would on other
		// threads, in the host's namespace).
		c, err := d.DialContext(ctx, "tcp", addr)
		res <- result{c, err}
	}()
	r := <-res
	return r.c, r.err
}

// splice copies between a pod's connection and the client's stream. The
// client closing its side half-closes the connection (the pod's server
// sees EOF and may still answer); the pod's side ending ends the whole.
func splice(conn net.Conn, stream io.ReadWriteCloser) error {
	defer conn.Close()
	go func() {
		if _, err := io.Copy(conn, stream); err == nil {
			if tc, ok := conn.(*net.TCPConn); ok {
				tc.CloseWrite()
			}
			return
		}
		// The client's stream broke: end the connection, which ends the
		// copy below.
		conn.Close()
	}()
	_, err := io.Copy(stream, conn)
	if err != nil && !errors.Is(err, net.ErrClosed) {
		return fmt.Errorf("port-forward: %w", err)
	}
	return nil
}
