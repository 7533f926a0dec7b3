// Package fdpass is this engine's extension of the Docker API that hands
// open descriptors to a container's first process: socket activation
// (LISTEN_FDS) and --preserve-fds through `docker run` and `docker start`.
//
// A client that uses it sends POST /containers/{id}/start over the
// daemon's unix socket with the descriptors attached (SCM_RIGHTS) to the
// bytes of the request and the headers below saying what they are. The
// process gets them as fds 3, 4, ... in that order. The stock API is
// unchanged: a request without the headers is Docker's start, and
// descriptors sent without them are closed unused. Over TCP (or TLS) the
// headers are refused: descriptors cannot cross a network. See
// docs/socket-activation.md.
package fdpass

import (
	"errors"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
)

// The request headers of the extension.
const (
	// HeaderFiles is the number of descriptors attached to the request.
	HeaderFiles = "Sdengine-Pass-Fds"
	// HeaderListenFds says the first N of them are socket-activation
	// sockets: the process gets LISTEN_FDS=N, LISTEN_PID (its own pid,
	// 1) and LISTEN_FDNAMES.
	HeaderListenFds = "Sdengine-Listen-Fds"
	// HeaderListenFdNames is LISTEN_FDNAMES, colon-separated, one name
	// per socket-activation descriptor.
	HeaderListenFdNames = "Sdengine-Listen-Fdnames"
)

// MaxFiles is the most descriptors one request can carry (the kernel's
// SCM_MAX_FD).
const MaxFiles = 253

// Request is what the headers describe.
type Request struct {
	Files  int      // descriptors attached
	Listen int      // of which the first Listen are socket activation's
	Names  []string // LISTEN_FDNAMES; empty, or one per Listen descriptor
}

// Set writes r into h.
func (r Request) Set(h http.Header) {
	h.Set(HeaderFiles, strconv.Itoa(r.Files))
	if r.Listen > 0 {
		h.Set(HeaderListenFds, strconv.Itoa(r.Listen))
		if len(r.Names) > 0 {
			h.Set(HeaderListenFdNames, strings.Join(r.Names, ":"))
		}
	}
}

// Parse reads the headers: ok is false when the request does not use the
// extension (no HeaderFiles).
func Parse(h http.Header) (r Request, ok bool, err error) {
	v := h.Get(HeaderFiles)
	if v == "" {
		if h.Get(HeaderListenFds) != "" || h.Get(HeaderListenFdNames) != "" {
			return r, true, fmt.Errorf("%s without %s", HeaderListenFds, HeaderFiles)
		}
		return r, false, nil
	}
	if r.Files, err = strconv.Atoi(v); err != nil {
		return r, true, fmt.Errorf("invalid %s %q", HeaderFiles, v)
	}
	if v := h.Get(HeaderListenFds); v != "" {
		if r.Listen, err = strconv.Atoi(v); err != nil {
			return r, true, fmt.Errorf("invalid %s %q", HeaderListenFds, v)
		}
	}
	if v := h.Get(HeaderListenFdNames); v != "" {
		r.Names = strings.Split(v, ":")
	}
	return r, true, r.Validate()
}

// Validate checks the counts and the names as systemd does
// (sd_listen_fds_with_names refuses names that do not match the count).
func (r Request) Validate() error {
	if r.Files < 1 || r.Files > MaxFiles {
		return fmt.Errorf("the number of descriptors to pass must be 1 to %d, not %d", MaxFiles, r.Files)
	}
	if r.Listen < 0 || r.Listen > r.Files {
		return fmt.Errorf("%d socket-activation descriptors out of %d passed", r.Listen, r.Files)
	}
	if len(r.Names) > 0 && len(r.Names) != r.Listen {
		return fmt.Errorf("%d descriptor names for %d socket-activation descriptors", len(r.Names), r.Listen)
	}
	for _, n := range r.Names {
		if err := validName(n); err != nil {
			return err
		}
	}
	return nil
}

// validName is systemd's fdname_is_valid: up to 255 printable ASCII
// characters, no colon.
func validName(n string) error {
	if n == "" || len(n) > 255 {
		return fmt.Errorf("invalid descriptor name %q: 1 to 255 characters", n)
	}
	for _, c := range n {
		if c < ' ' || c > '~' || c == ':' {
			return fmt.Errorf("invalid descriptor name %q: printable ASCII without ':'", n)
		}
	}
	return nil
}

// Files is a start's descriptors as the daemon holds them. The receiver
// of the request owns them and closes them once the container started.
type Files struct {
	Request
	Fds []*os.File
}

// Close closes every descriptor.
func (f *Files) Close() {
	if f == nil {
		return
	}
	for _, fl := range f.Fds {
		fl.Close()
	}
	f.Fds = nil
}

// ErrNotUnix is the refusal of a request that asks to pass descriptors
// on a connection that cannot carry them.
var ErrNotUnix = errors.New("file descriptors can only be passed over the daemon's unix socket, not over TCP or TLS")
