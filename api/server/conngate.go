package server

import (
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"
)

// connGate is a listener that caps the connections that have not yet sent
// a complete first request header ("pending": accepted, but the HTTP
// server has not read a request from them). The server's ConnState hook
// (state) tells it when a connection stops being pending: its first
// request was read (StateActive), it was hijacked or it closed.
//
// At the cap, the oldest pending connection is closed for the newcomer if
// it has been pending for evictAfter; otherwise accepting waits until a
// connection leaves the pending set or the oldest becomes old enough. A
// real client sends its header as soon as it connects, so it is never the
// oldest for long; a flood of silent connections only churns itself, and
// clients keep being served. The header timeout closes the rest anyway.
type connGate struct {
	net.Listener
	max        int
	evictAfter time.Duration

	mu      sync.Mutex
	pending map[net.Conn]time.Time
	freed   chan struct{} // a slot may have freed (buffered, 1)
	closed  chan struct{}
	once    sync.Once
}

func newConnGate(l net.Listener, max int, evictAfter time.Duration) *connGate {
	return &connGate{
		Listener: l, max: max, evictAfter: evictAfter,
		pending: map[net.Conn]time.Time{},
		freed:   make(chan struct{}, 1),
		closed:  make(chan struct{}),
	}
}

// Accept waits for room in the pending set, then accepts.
func (g *connGate) Accept() (net.Conn, error) {
	if err := g.waitRoom(); err != nil {
		return nil, err
	}
	c, err := g.Listener.Accept()
	if err != nil {
		return nil, err
	}
	g.mu.Lock()
	g.pending[c] = time.Now()
	g.mu.Unlock()
	return c, nil
}

func (g *connGate) waitRoom() error {
	for {
		g.mu.Lock()
		if len(g.pending) < g.max {
			g.mu.Unlock()
			return nil
		}
		var oldest net.Conn
		var since time.Time
		for c, t := range g.pending {
			if oldest == nil || t.Before(since) {
				oldest, since = c, t
			}
		}
		wait := g.evictAfter - time.Since(since)
		if wait <= 0 {
			delete(g.pending, oldest)
			g.mu.Unlock()
			slog.Debug("API: closing a connection that sent no request header", "remote", oldest.RemoteAddr().String(), "pending", g.max, "age", time.Since(since).String())
			oldest.Close()
			return nil
		}
		g.mu.Unlock()
		t := time.NewTimer(wait)
		select {
		case <-g.freed:
		case <-t.C:
		case <-g.closed:
			t.Stop()
			return net.ErrClosed
		}
		t.Stop()
	}
}

// state is the http.Server's ConnState hook.
func (g *connGate) state(c net.Conn, s http.ConnState) {
	switch s {
	case http.StateActive, http.StateHijacked, http.StateClosed:
	default:
		return
	}
	g.mu.Lock()
	_, ok := g.pending[c]
	delete(g.pending, c)
	g.mu.Unlock()
	if ok {
		select {
		case g.freed <- struct{}{}:
		default:
		}
	}
}

// Close stops accepting, also an Accept waiting for room.
func (g *connGate) Close() error {
	g.once.Do(func() { close(g.closed) })
	return g.Listener.Close()
}
