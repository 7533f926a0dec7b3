// Package notifymsg is what the daemon and the CLI share of sd_notify(3)
// for containers (docs/systemd.md, "Readiness"): the messages a container
// sends, parsed; how they travel in the daemon's events (Attributes,
// FromAttributes), which the CLI relays to its own systemd; and the label
// that asks for a notify socket. The socket and the state it drives are
// the daemon's (daemon/sdnotify).
package notifymsg

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Label turns the engine's notify socket on ("true") or off ("false") for
// a container; without it only systemd containers have one. Our CLI's
// `run --sdnotify=container` sets it.
const Label = "io.sdengine.sdnotify"

// MaxMessage is the largest notification accepted, systemd's own bound
// (NOTIFY_BUFFER_MAX, PIPE_BUF): anything larger is dropped whole.
const MaxMessage = 4096

// maxStatus bounds STATUS= as kept and shown (inspect, events).
const maxStatus = 512

// Message is one notification's fields the engine understands; the rest
// (X_SYSTEMD_*, ERRNO=, FDSTORE=, ...) are ignored, as systemd ignores
// what it does not know.
type Message struct {
	Ready     bool
	Reloading bool
	Stopping  bool
	// Watchdog is WATCHDOG=1, a keep-alive ping; WatchdogTrigger is
	// WATCHDOG=trigger, a failure reported by the sender itself.
	Watchdog        bool
	WatchdogTrigger bool
	// Status is STATUS=, HasStatus says it was given (it may be empty).
	Status    string
	HasStatus bool
	// MainPID is MAINPID= (0 when absent).
	MainPID int
	// WatchdogUsec is WATCHDOG_USEC= (0 when absent): the ping interval
	// the sender promises from now on.
	WatchdogUsec uint64
	// ExtendTimeoutUsec is EXTEND_TIMEOUT_USEC= (0 when absent): more
	// time asked for the current step (start, reload, stop).
	ExtendTimeoutUsec uint64
}

// ErrGarbage is returned for what is no notification at all.
var ErrGarbage = errors.New("not a notification")

// ErrNothingKnown is returned for a well-formed notification with no
// field the engine understands (systemd 254's X_SYSTEMD_UNIT_ACTIVE=):
// ignored without a word.
var ErrNothingKnown = errors.New("no field the engine understands")

// Parse reads a datagram: newline-separated KEY=VALUE lines. A datagram
// that is too large, holds a NUL or invalid UTF-8, or a non-empty line
// without '=' is garbage and changes nothing; a known key with a value it
// cannot take is ignored alone (as systemd does).
func Parse(b []byte) (Message, error) {
	var m Message
	if len(b) > MaxMessage {
		return m, fmt.Errorf("%w: %d bytes, more than %d", ErrGarbage, len(b), MaxMessage)
	}
	if len(b) == 0 || !utf8.Valid(b) || strings.IndexByte(string(b), 0) >= 0 {
		return m, fmt.Errorf("%w: empty, NUL or invalid UTF-8", ErrGarbage)
	}
	known := false
	for _, line := range strings.Split(string(b), "\n") {
		if line == "" {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok || k == "" {
			return Message{}, fmt.Errorf("%w: line without KEY=", ErrGarbage)
		}
		switch k {
		case "READY":
			m.Ready, known = v == "1", known || v == "1"
		case "RELOADING":
			m.Reloading, known = v == "1", known || v == "1"
		case "STOPPING":
			m.Stopping, known = v == "1", known || v == "1"
		case "WATCHDOG":
			switch v {
			case "1":
				m.Watchdog, known = true, true
			case "trigger":
				m.WatchdogTrigger, known = true, true
			}
		case "STATUS":
			m.Status, m.HasStatus, known = truncate(v, maxStatus), true, true
		case "MAINPID":
			if n, err := strconv.Atoi(v); err == nil && n > 0 {
				m.MainPID, known = n, true
			}
		case "WATCHDOG_USEC":
			if n, err := strconv.ParseUint(v, 10, 64); err == nil && n > 0 {
				m.WatchdogUsec, known = n, true
			}
		case "EXTEND_TIMEOUT_USEC":
			if n, err := strconv.ParseUint(v, 10, 64); err == nil && n > 0 {
				m.ExtendTimeoutUsec, known = n, true
			}
		}
	}
	if !known {
		return m, ErrNothingKnown
	}
	return m, nil
}

// truncate cuts s to at most n bytes on a rune boundary.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// Format writes m back as a notification, in a fixed order: what a relay
// (our CLI, for its unit) sends on. pid, when not 0, is given as MAINPID=
// instead of m's own.
func (m Message) Format(pid int) string {
	var lines []string
	if pid == 0 {
		pid = m.MainPID
	}
	if pid > 0 {
		lines = append(lines, "MAINPID="+strconv.Itoa(pid))
	}
	if m.HasStatus {
		lines = append(lines, "STATUS="+m.Status)
	}
	if m.WatchdogUsec > 0 {
		lines = append(lines, "WATCHDOG_USEC="+strconv.FormatUint(m.WatchdogUsec, 10))
	}
	if m.ExtendTimeoutUsec > 0 {
		lines = append(lines, "EXTEND_TIMEOUT_USEC="+strconv.FormatUint(m.ExtendTimeoutUsec, 10))
	}
	if m.Reloading {
		lines = append(lines, "RELOADING=1")
	}
	if m.Stopping {
		lines = append(lines, "STOPPING=1")
	}
	if m.Ready {
		lines = append(lines, "READY=1")
	}
	if m.Watchdog {
		lines = append(lines, "WATCHDOG=1")
	}
	if m.WatchdogTrigger {
		lines = append(lines, "WATCHDOG=trigger")
	}
	return strings.Join(lines, "\n")
}

// Attributes are m's fields as event attributes (the `sdnotify` container
// event), only those given, under the protocol's own upper-case keys (which
// no label of Docker's conventions takes); FromAttributes reads them back.
func (m Message) Attributes() map[string]string {
	a := map[string]string{}
	set := func(k string, on bool) {
		if on {
			a[k] = "1"
		}
	}
	set("READY", m.Ready)
	set("RELOADING", m.Reloading)
	set("STOPPING", m.Stopping)
	set("WATCHDOG", m.Watchdog)
	if m.WatchdogTrigger {
		a["WATCHDOG"] = "trigger"
	}
	if m.HasStatus {
		a["STATUS"] = m.Status
	}
	if m.MainPID > 0 {
		a["MAINPID"] = strconv.Itoa(m.MainPID)
	}
	if m.WatchdogUsec > 0 {
		a["WATCHDOG_USEC"] = strconv.FormatUint(m.WatchdogUsec, 10)
	}
	if m.ExtendTimeoutUsec > 0 {
		a["EXTEND_TIMEOUT_USEC"] = strconv.FormatUint(m.ExtendTimeoutUsec, 10)
	}
	return a
}

// FromAttributes is the Message an `sdnotify` event's attributes carry.
func FromAttributes(a map[string]string) Message {
	var m Message
	m.Ready = a["READY"] == "1"
	m.Reloading = a["RELOADING"] == "1"
	m.Stopping = a["STOPPING"] == "1"
	m.Watchdog = a["WATCHDOG"] == "1"
	m.WatchdogTrigger = a["WATCHDOG"] == "trigger"
	m.Status, m.HasStatus = a["STATUS"]
	m.MainPID, _ = strconv.Atoi(a["MAINPID"])
	m.WatchdogUsec, _ = strconv.ParseUint(a["WATCHDOG_USEC"], 10, 64)
	m.ExtendTimeoutUsec, _ = strconv.ParseUint(a["EXTEND_TIMEOUT_USEC"], 10, 64)
	return m
}
