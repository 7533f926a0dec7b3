//go:build integration

package integrationcli

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/docker/docker/api/types/plugins/logdriver"
)

// The local log driver end to end: the shim writes Docker's format under
// the container's directory, rotates and compresses at max-size, and
// docker logs reads it back whole, with tail, timestamps, details and
// follow.
func TestLogsLocalDriver(t *testing.T) {
	id := remember(shared.MustCLI(t, "run", "-d", "--log-driver", "local",
		"--log-opt", "max-size=1k", "--log-opt", "max-file=3",
		"busybox", "sh", "-c", `i=0; while [ $i -lt 300 ]; do echo line$i; i=$((i+1)); done; sleep 2; echo -n unfinished`))
	defer shared.CLI("rm", "-f", id)

	// -f, started before the last output, goes on until the container
	// exits. (An unfinished line is logged when its stream ends, as
	// Docker's copier does.)
	followed := make(chan Result, 1)
	go func() { followed <- shared.CLI("logs", "-f", id) }()
	select {
	case r := <-followed:
		if !strings.HasSuffix(r.Stdout, "line299\nunfinished") {
			t.Errorf("logs -f: %.300q", r.Stdout)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("logs -f did not end when the container exited")
	}
	if out := shared.CLI("logs", "--tail", "2", id).Stdout; out != "line299\nunfinished" {
		t.Errorf("--tail 2: %q", out)
	}
	all := strings.Split(shared.CLI("logs", id).Stdout, "\n")
	if n := len(all); n < 30 || n > 200 || all[n-2] != "line299" {
		t.Errorf("rotation should keep part of the 300 lines: %d, ending %q", n, all[max(0, n-3):])
	}
	for i := 1; i < len(all)-1; i++ { // consecutive: none lost within what is kept
		a, err1 := strconv.Atoi(strings.TrimPrefix(all[i-1], "line"))
		b, err2 := strconv.Atoi(strings.TrimPrefix(all[i], "line"))
		if err1 != nil || err2 != nil || b != a+1 {
			t.Fatalf("%q after %q", all[i], all[i-1])
		}
	}
	out := shared.CLI("logs", "-t", "--details", "--tail", "1", id).Stdout
	ts, rest, _ := strings.Cut(out, " ")
	if _, err := time.Parse(time.RFC3339Nano, ts); err != nil || rest != " unfinished" {
		t.Errorf("-t --details: %q", out)
	}
	if lp := shared.MustCLI(t, "inspect", "--format", "{{.LogPath}}", id); lp != "" {
		t.Errorf("inspect LogPath %q: Docker leaves it empty for local", lp)
	}

	dir := filepath.Join(shared.Root, "containers", id, "local-logs")
	waitFor(t, func() bool { // compression runs in the background
		_, err1 := os.Stat(filepath.Join(dir, "container.log.1.gz"))
		_, err2 := os.Stat(filepath.Join(dir, "container.log.2.gz"))
		return err1 == nil && err2 == nil
	})
	if _, err := os.Stat(filepath.Join(dir, "container.log.3.gz")); !os.IsNotExist(err) {
		t.Errorf("max-file=3 kept a fourth file: %v", err)
	}
	// The current file in Docker's framing, decoded with the docker
	// module's own decoder: the unfinished line is a partial entry.
	b, err := os.ReadFile(filepath.Join(dir, "container.log"))
	if err != nil {
		t.Fatal(err)
	}
	var last logdriver.LogEntry
	for len(b) > 8 {
		n := int(uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3]))
		if err := logdriver.NewLogEntryDecoder(bytes.NewReader(b[:4+n])).Decode(&last); err != nil && !errors.Is(err, io.EOF) {
			t.Fatal(err)
		}
		if !bytes.Equal(b[:4], b[4+n:8+n]) {
			t.Fatalf("record of %d bytes: trailing length differs", n)
		}
		b = b[8+n:]
	}
	if string(last.Line) != "unfinished" || !last.Partial || last.Source != "stdout" {
		t.Errorf("last record %+v", last)
	}

	if r := shared.CLI("run", "--rm", "--log-driver", "local", "--log-opt", "max-file=1", "busybox", "true"); r.Code == 0 ||
		!strings.Contains(r.Stderr, "compression cannot be enabled when max file count is 1") {
		t.Errorf("max-file=1 with compression: %s", r)
	}
}

// daemon.json's log-driver and log-opts make local the default.
func TestLogsLocalDefaultFromDaemonJSON(t *testing.T) {
	d := NewDaemon(t)
	conf := `{"log-driver":"local","log-opts":{"max-size":"10m","compress":"false"}}` + "\n"
	if err := os.WriteFile(filepath.Join(d.Dir, "daemon.json"), []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	d.Start(t)
	t.Cleanup(func() { d.Cleanup(t) })
	loadBusybox(t, d)
	id := d.MustCLI(t, "run", "-d", "busybox", "sh", "-c", "echo by default; echo on stderr >&2")
	d.MustCLI(t, "wait", id)
	if cfg := d.MustCLI(t, "inspect", "-f", "{{.HostConfig.LogConfig.Type}} {{.HostConfig.LogConfig.Config}}", id); cfg != "local map[compress:false max-size:10m]" {
		t.Fatalf("log config %q", cfg)
	}
	if r := d.CLI("logs", id); r.Code != 0 || r.Stdout != "by default\n" || r.Stderr != "on stderr\n" {
		t.Fatalf("logs: %s", r)
	}
	if _, err := os.Stat(filepath.Join(d.Root, "containers", id, "local-logs", "container.log")); err != nil {
		t.Fatal(err)
	}
	d.MustCLI(t, "rm", id)
}
