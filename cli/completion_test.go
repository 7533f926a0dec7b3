package cli

import (
	"bytes"
	"io"
	"strings"
	"testing"

	"github.com/sdengine/engine/cli/command"
	"github.com/spf13/cobra"
)

// complete runs cobra's hidden __complete command, as the shell scripts do.
func complete(t *testing.T, args ...string) string {
	t.Helper()
	var out bytes.Buffer
	c := command.NewCli(io.NopCloser(strings.NewReader("")), &out, io.Discard)
	// No daemon here: name lookups must fail fast and quietly.
	c.Host = "unix:///nonexistent/docker.sock"
	root := NewRootCommand(c)
	root.SetArgs(append([]string{cobra.ShellCompRequestCmd}, args...))
	root.SetOut(&out)
	root.SetErr(io.Discard)
	if err := root.Execute(); err != nil {
		t.Fatalf("__complete %v: %v", args, err)
	}
	return out.String()
}

func TestCompleteInit(t *testing.T) {
	for _, args := range [][]string{{"run", "--init="}, {"create", "--init="}, {"container", "run", "--init="}} {
		out := complete(t, args...)
		if !strings.HasPrefix(out, "systemd\t") {
			t.Errorf("%v: %q", args, out)
		}
	}
	if out := complete(t, "run", "--init=s"); !strings.Contains(out, "systemd") {
		t.Errorf("--init=s: %q", out)
	}
}

func TestCompletionKinds(t *testing.T) {
	c := command.NewCli(io.NopCloser(strings.NewReader("")), io.Discard, io.Discard)
	root := NewRootCommand(c)
	want := map[string]argKind{
		"run": argImageFirst, "create": argImageFirst, "stop": argContainer, "logs": argContainer,
		"rmi": argImage, "tag": argImage, "inspect": argAny, "ps": argNone, "images": argNone,
		"container stop": argContainer, "container ps": argNone, "image rm": argImage, "image ls": argNone,
		"image load": argNone, "version": argNone,
	}
	for path, kind := range want {
		cmd, _, err := root.Find(strings.Fields(path))
		if err != nil || cmd == root {
			t.Errorf("%s: not found", path)
			continue
		}
		if got := kindOf(cmd); got != kind {
			t.Errorf("%s: kind %d, want %d", path, got, kind)
		}
		if (kind != argNone) != (cmd.ValidArgsFunction != nil) {
			t.Errorf("%s: ValidArgsFunction set=%v", path, cmd.ValidArgsFunction != nil)
		}
	}
}

// After the image, run completes nothing from the daemon (the command
// inside the container is the user's).
func TestCompleteAfterImage(t *testing.T) {
	out := complete(t, "run", "busybox", "")
	if strings.Contains(out, "systemd") || !strings.HasSuffix(strings.TrimSpace(out), ":0") {
		t.Errorf("%q", out)
	}
}
