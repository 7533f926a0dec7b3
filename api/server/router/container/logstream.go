package container

import (
	"io"
	"net/http"

	"github.com/docker/docker/pkg/stdcopy"
)

// logStreams starts a plain streamed response for /logs and returns the
// writers for each stream. Every write is flushed so `logs -f` is live.
func logStreams(w http.ResponseWriter, _ *http.Request, tty bool) (io.ReadCloser, io.Writer, io.Writer, error) {
	if tty {
		w.Header().Set("Content-Type", "application/vnd.docker.raw-stream")
	} else {
		w.Header().Set("Content-Type", "application/vnd.docker.multiplexed-stream")
	}
	w.WriteHeader(http.StatusOK)
	fw := &flushWriter{w: w}
	fw.flush()
	if tty {
		return nil, fw, fw, nil
	}
	return nil, stdcopy.NewStdWriter(fw, stdcopy.Stdout), stdcopy.NewStdWriter(fw, stdcopy.Stderr), nil
}

type flushWriter struct{ w http.ResponseWriter }

func (f *flushWriter) flush() {
	if fl, ok := f.w.(http.Flusher); ok {
		fl.Flush()
	}
}

func (f *flushWriter) Write(p []byte) (int, error) {
	n, err := f.w.Write(p)
	f.flush()
	return n, err
}
