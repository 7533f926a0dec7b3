package hooks

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
)

// maxState bounds the OCI state read from stdin.
const maxState = 1 << 20

// Main is the wrapper: args are PHASE CONFIG_PATH LOGFILE HOOK... and
// stdin is the OCI state from libcontainer. A failing prestart hook makes
// it exit 1 with the failure on stderr, which libcontainer puts into the
// start error the user sees. Poststop failures are logged and it exits 0:
// libcontainer would otherwise report the container's destroy as failed
// (and the shim would retry it, running the hooks again). Never returns.
func Main(args []string) {
	if len(args) < 3 || (args[0] != Prestart && args[0] != Poststop) {
		fmt.Fprintf(os.Stderr, "usage: %s prestart|poststop CONFIG_PATH LOGFILE HOOK...\n", Command)
		os.Exit(2)
	}
	phase, configPath, logFile, hooks := args[0], args[1], args[2], args[3:]
	state, err := io.ReadAll(io.LimitReader(os.Stdin, maxState))
	if err != nil {
		state = nil
	}
	state = withBundle(state, filepath.Dir(configPath))
	// os.Exit skips defers: closeLog is called before each exit.
	log, closeLog := openLog(logFile)
	log = log.With("phase", phase, "container", stateID(state))

	err = Run(context.Background(), Options{Phase: phase, ConfigPath: configPath, Hooks: hooks, State: state})
	for _, e := range hookErrors(err) {
		log.Error("hook failed", "hook", e.Hook, "timed_out", e.TimedOut, "err", e.Err, "stderr", e.Stderr)
	}
	if err != nil && phase == Prestart {
		fmt.Fprintln(os.Stderr, err)
		closeLog()
		os.Exit(1)
	}
	closeLog()
	os.Exit(0)
}

// hookErrors flattens what Run returned.
func hookErrors(err error) []*HookError {
	if err == nil {
		return nil
	}
	var list []error
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		list = j.Unwrap()
	} else {
		list = []error{err}
	}
	var out []*HookError
	for _, e := range list {
		var he *HookError
		if errors.As(e, &he) {
			out = append(out, he)
		}
	}
	return out
}

// openLog appends to logFile, or falls back to stderr.
func openLog(logFile string) (*slog.Logger, func()) {
	if logFile != "" {
		if f, err := os.OpenFile(logFile, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600); err == nil {
			return slog.New(slog.NewTextHandler(f, nil)), func() { _ = f.Close() }
		}
	}
	return slog.New(slog.NewTextHandler(os.Stderr, nil)), func() {}
}

// withBundle fills in the state's bundle when the runtime left it empty;
// other fields, known or not, pass through unchanged.
func withBundle(state []byte, bundle string) []byte {
	var m map[string]any
	if json.Unmarshal(state, &m) != nil || m == nil {
		return state
	}
	if b, _ := m["bundle"].(string); b != "" {
		return state
	}
	m["bundle"] = bundle
	out, err := json.Marshal(m)
	if err != nil {
		return state
	}
	return out
}

func stateID(state []byte) string {
	var s struct {
		ID string `json:"id"`
	}
	_ = json.Unmarshal(state, &s)
	return s.ID
}
