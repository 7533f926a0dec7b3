package journald

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os/exec"
	"strconv"
	"syscall"
	"time"

	"github.com/sdengine/engine/daemon/logger/logfile"
	"github.com/sdengine/engine/pkg/errdefs"
)

// Message and ReadOptions are the logger package's reading types.
type (
	Message     = logfile.Message
	ReadOptions = logfile.ReadOptions
)

// catchUpDelay is how long a follow waits, once the container is gone,
// for journald to store what the container sent last, before reading the
// journal one last time from where the follower got to. journald tells
// followers of new data only every 250 ms or so, so the follower itself
// cannot be relied on for the last entries.
var catchUpDelay = 100 * time.Millisecond

// journalctlPath is the reader program; a variable for tests.
var journalctlPath = "journalctl"

// record is the part of a `journalctl -o json` entry we use. MESSAGE is
// raw: journalctl writes a string, or an array of bytes when the value is
// not valid UTF-8 or holds control characters.
type record struct {
	Message  json.RawMessage `json:"MESSAGE"`
	Priority string          `json:"PRIORITY"`
	Partial  string          `json:"CONTAINER_PARTIAL_MESSAGE"`
	Realtime string          `json:"__REALTIME_TIMESTAMP"`
	Cursor   string          `json:"__CURSOR"`
}

var (
	// errStop ends a read early without it being an error (Until reached).
	errStop = errors.New("stop")
	// errDone reports a follow ended because the container is gone.
	errDone = errors.New("done")
)

// Read calls fn for each of the container's entries opts selects, oldest
// first. With Follow it keeps delivering new entries until ctx is cancelled
// (returns nil at once) or done is closed (what the container sent last is
// delivered first, then nil). An error from fn stops the read and is
// returned.
func Read(ctx context.Context, containerID string, opts ReadOptions, done <-chan struct{}, fn func(Message) error) error {
	if containerID == "" {
		return errdefs.InvalidParameter(errors.New("journald: no container ID to read"))
	}
	r := &reader{opts: opts, fn: fn, match: fieldIDFull + "=" + containerID}
	if opts.Follow && !opts.Until.IsZero() && !opts.Until.After(time.Now()) {
		r.opts.Follow = false // nothing newer can be selected
	}
	// journalctl gets --lines wrong combined with --since or --until (it
	// gives the first N entries, or none), so bounds are never passed with
	// it. The last N entries at or after Since are among the last N
	// entries, so Since is left to deliver's exact filter; with Until the
	// tail is taken here instead (ring).
	args := []string{}
	tailInGo := r.opts.Tail >= 0 && !r.opts.Until.IsZero() && !r.opts.Follow
	switch {
	case tailInGo:
		r.ring = make([]Message, 0, r.opts.Tail)
	case r.opts.Tail >= 0:
		args = append(args, "--lines", strconv.Itoa(r.opts.Tail))
	case r.opts.Follow:
		args = append(args, "--lines", "all") // --follow defaults to 10
	}
	if r.opts.Tail < 0 || tailInGo {
		// The @ bounds are widened to whole seconds; deliver applies
		// the exact ones.
		if !r.opts.Since.IsZero() {
			args = append(args, "--since", "@"+strconv.FormatInt(r.opts.Since.Unix(), 10))
		}
		if !r.opts.Until.IsZero() && !r.opts.Follow {
			args = append(args, "--until", "@"+strconv.FormatInt(r.opts.Until.Unix()+1, 10))
		}
	}
	if !r.opts.Follow {
		err := r.run(ctx, args, nil)
		if (err == nil || err == errStop) && r.ring != nil && ctx.Err() == nil {
			err = r.flushRing()
		}
		return result(err)
	}
	err := r.run(ctx, append(args, "--follow"), done)
	if err != errDone {
		return result(err)
	}
	// The container is gone: pick up what the follower had not seen.
	select {
	case <-ctx.Done():
		return nil
	case <-time.After(catchUpDelay):
	}
	if r.cursor != "" {
		args = []string{"--after-cursor", r.cursor}
	}
	return result(r.run(ctx, args, nil))
}

func result(err error) error {
	if err == errStop {
		return nil
	}
	return err
}

type reader struct {
	opts   ReadOptions
	fn     func(Message) error
	match  string
	cursor string    // of the last entry seen
	ring   []Message // the last Tail entries, when the tail is taken here
	head   int       // oldest ring slot once the ring is full
}

// run runs journalctl with args (plus what every run has) and delivers
// what it prints. It returns when journalctl is done printing, when ctx is
// cancelled (nil), when the follow is over (errDone, after delivering what
// journalctl had already printed), or on an error.
func (r *reader) run(ctx context.Context, args []string, done <-chan struct{}) error {
	args = append([]string{"-o", "json", "--all", "--no-pager",
		"--output-fields=MESSAGE,PRIORITY," + fieldPartial}, args...)
	cmd := exec.Command(journalctlPath, append(args, r.match)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return fmt.Errorf("journalctl: %w", err)
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("journald: running journalctl: %w", err)
	}
	lines := make(chan []byte)
	readErr := make(chan error, 1)
	go func() { readErr <- readLines(out, lines) }()
	// kill ends journalctl by its PID and lets the line reader finish;
	// whatever it then still delivers is dropped.
	kill := func() {
		_ = cmd.Process.Signal(syscall.SIGKILL)
		go func() {
			for range lines { //nolint:revive // unblock readLines so it reaches EOF
			}
		}()
		_ = cmd.Wait()
	}
	var until <-chan time.Time
	if r.opts.Follow && !r.opts.Until.IsZero() {
		t := time.NewTimer(time.Until(r.opts.Until))
		defer t.Stop()
		until = t.C
	}
	for {
		select {
		case <-ctx.Done():
			kill()
			return nil
		case <-until:
			kill()
			return errStop
		case <-done:
			// Deliver what journalctl already printed, then stop it.
			_ = cmd.Process.Signal(syscall.SIGKILL)
			var derr error
			for line := range lines {
				if derr == nil {
					derr = r.deliver(line)
				}
			}
			_ = cmd.Wait()
			if derr != nil {
				return derr
			}
			return errDone
		case line, ok := <-lines:
			if !ok {
				rerr := <-readErr
				if werr := cmd.Wait(); werr != nil {
					return fmt.Errorf("journald: journalctl: %w: %s", werr, bytes.TrimSpace(stderr.Bytes()))
				}
				return rerr
			}
			if err := r.deliver(line); err != nil {
				kill()
				return err
			}
		}
	}
}

// readLines sends each line of journalctl's output, then closes lines.
func readLines(out io.Reader, lines chan<- []byte) error {
	defer close(lines)
	br := bufio.NewReaderSize(out, 64*1024)
	for {
		line, err := br.ReadBytes('\n')
		if len(line) > 1 {
			lines <- line
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// flushRing delivers the entries kept for a tail, oldest first.
func (r *reader) flushRing() error {
	n := len(r.ring)
	for i := 0; i < n; i++ {
		if err := r.fn(r.ring[(r.head+i)%n]); err != nil {
			return err
		}
	}
	return nil
}

// emit hands a selected message on, or keeps it in the ring.
func (r *reader) emit(m Message) error {
	if r.ring == nil {
		return r.fn(m)
	}
	if cap(r.ring) == 0 {
		return nil
	}
	if len(r.ring) < cap(r.ring) {
		r.ring = append(r.ring, m)
		return nil
	}
	r.ring[r.head] = m
	r.head = (r.head + 1) % len(r.ring)
	return nil
}

func (r *reader) deliver(line []byte) error {
	var rec record
	if err := json.Unmarshal(line, &rec); err != nil {
		slog.Warn("journald: skipping undecodable journalctl line", "err", err)
		return nil
	}
	if rec.Cursor != "" {
		r.cursor = rec.Cursor
	}
	usec, err := strconv.ParseInt(rec.Realtime, 10, 64)
	if err != nil {
		slog.Warn("journald: entry without a valid timestamp", "value", rec.Realtime)
		return nil
	}
	ts := time.UnixMicro(usec)
	if !r.opts.Since.IsZero() && ts.Before(r.opts.Since) {
		return nil
	}
	if !r.opts.Until.IsZero() && ts.After(r.opts.Until) {
		return errStop
	}
	msg, err := decodeValue(rec.Message)
	if err != nil {
		slog.Warn("journald: undecodable MESSAGE", "err", err)
		return nil
	}
	if rec.Partial != "true" {
		msg = append(msg, '\n')
	}
	stream := "stdout"
	if rec.Priority == strconv.Itoa(int(priorityStderr)) {
		stream = "stderr"
	}
	return r.emit(Message{Stream: stream, Line: msg, Time: ts})
}

// decodeValue reads a field as journalctl's JSON output writes it: a
// string, an array of byte values, or null (absent).
func decodeValue(raw json.RawMessage) ([]byte, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return []byte{}, nil
	}
	if raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, err
		}
		return []byte(s), nil
	}
	var b []int
	if err := json.Unmarshal(raw, &b); err != nil {
		return nil, err
	}
	out := make([]byte, len(b))
	for i, v := range b {
		if v < 0 || v > 255 {
			return nil, fmt.Errorf("byte value %d out of range", v)
		}
		out[i] = byte(v)
	}
	return out, nil
}
