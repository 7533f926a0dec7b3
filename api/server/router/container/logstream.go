package container

import (
	"io"
	"net/http"
	"time"

	"github.com/docker/docker/pkg/stdcopy"

	"github.com/sdengine/engine/pkg/delayflush"
)

// logFlushDelay bounds how long a written log line may wait in the buffer:
// `logs -f` stays live, while a large `logs` goes out in big writes
// instead of one syscall per line.
const logFlushDelay = 20 * time.Millisecond

// logStreams starts a plain streamed response for /logs and returns the
// writers for each stream; closing the first value flushes what is left.
func logStreams(w http.ResponseWriter, _ *http.Request, tty bool) (io.ReadCloser, io.Writer, io.Writer, error) {
	if tty {
		w.Header().Set("Content-Type", "application/vnd.docker.raw-stream")
	} else {
		w.Header().Set("Content-Type", "application/vnd.docker.multiplexed-stream")
	}
	w.WriteHeader(http.StatusOK)
	flusher, _ := w.(http.Flusher)
	after := func() {}
	if flusher != nil {
		after = flusher.Flush
		flusher.Flush()
	}
	fw := delayflush.New(w, 64*1024, logFlushDelay, after)
	end := streamEnd{fw}
	if tty {
		return end, fw, fw, nil
	}
	return end, stdcopy.NewStdWriter(fw, stdcopy.Stdout), stdcopy.NewStdWriter(fw, stdcopy.Stderr), nil
}

// streamEnd is the "stdin" of a logs stream: there is none to read, and
// closing it flushes the output.
type streamEnd struct{ w *delayflush.Writer }

func (streamEnd) Read([]byte) (int, error) { return 0, io.EOF }
func (s streamEnd) Close() error           { return s.w.Close() }
