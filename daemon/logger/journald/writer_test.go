package journald

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"io"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/sdengine/engine/pkg/errdefs"
)

func newID(t *testing.T) string {
	t.Helper()
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

// entries asks journalctl for the container's entries, waiting until there
// are want of them: journald stores datagrams asynchronously.
func entries(t *testing.T, id string, want int) []map[string]any {
	t.Helper()
	var out []map[string]any
	for deadline := time.Now().Add(5 * time.Second); ; {
		b, err := exec.Command("journalctl", "-o", "json", "--all", "--no-pager", "CONTAINER_ID_FULL="+id).Output()
		if err != nil {
			t.Fatalf("journalctl: %v", err)
		}
		out = out[:0]
		sc := bufio.NewScanner(bytes.NewReader(b))
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			var m map[string]any
			if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
				t.Fatalf("journalctl line %q: %v", sc.Text(), err)
			}
			out = append(out, m)
		}
		if len(out) >= want || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if len(out) != want {
		t.Fatalf("got %d entries, want %d: %v", len(out), want, out)
	}
	return out
}

func mustNew(t *testing.T, c Container, opts map[string]string) *Logger {
	t.Helper()
	l, err := New(c, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

func write(t *testing.T, w io.Writer, s string) {
	t.Helper()
	if _, err := w.Write([]byte(s)); err != nil {
		t.Fatal(err)
	}
}

func TestFields(t *testing.T) {
	needJournald(t)
	id := newID(t)
	c := Container{
		ID: id, Name: "web", ImageName: "busybox:latest", ImageID: "sha256:" + strings.Repeat("ab", 32),
		Labels: map[string]string{"com.example.role": "front", "tier": "1", "other": "x"},
		Env:    []string{"PATH=/bin", "_my-var=v1", "APP_MODE=prod", "APP_LEVEL=3"},
	}
	l := mustNew(t, c, map[string]string{
		"labels": "com.example.role,missing", "labels-regex": "^ti",
		"env": "_my-var", "env-regex": "^APP_",
	})
	out, errw := l.StreamWriter("stdout"), l.StreamWriter("stderr")
	write(t, out, "out line\n")
	write(t, errw, "err line\n")
	got := entries(t, id, 2)
	want := map[string]string{
		"CONTAINER_ID": id[:12], "CONTAINER_ID_FULL": id, "CONTAINER_NAME": "web",
		"CONTAINER_TAG": id[:12], "SYSLOG_IDENTIFIER": id[:12], "IMAGE_NAME": "busybox:latest",
		"COM_EXAMPLE_ROLE": "front", "TIER": "1", "MY_VAR": "v1", "APP_MODE": "prod", "APP_LEVEL": "3",
	}
	for i, e := range got {
		for k, v := range want {
			if e[k] != v {
				t.Errorf("entry %d: %s = %v, want %q", i, k, e[k], v)
			}
		}
		for _, k := range []string{"OTHER", "PATH", "CONTAINER_PARTIAL_MESSAGE"} {
			if _, ok := e[k]; ok {
				t.Errorf("entry %d has %s", i, k)
			}
		}
	}
	if got[0]["MESSAGE"] != "out line" || got[0]["PRIORITY"] != "6" {
		t.Errorf("stdout entry: %v %v", got[0]["MESSAGE"], got[0]["PRIORITY"])
	}
	if got[1]["MESSAGE"] != "err line" || got[1]["PRIORITY"] != "3" {
		t.Errorf("stderr entry: %v %v", got[1]["MESSAGE"], got[1]["PRIORITY"])
	}
}

func TestTagTemplate(t *testing.T) {
	needJournald(t)
	id := newID(t)
	img := strings.Repeat("cd", 32)
	l := mustNew(t, Container{ID: id, Name: "db", ImageName: "pg:16", ImageID: "sha256:" + img},
		map[string]string{"tag": "{{.Name}}/{{.ImageName}}/{{.ID}}/{{.ImageID}}/{{.FullID}}"})
	write(t, l.StreamWriter("stdout"), "x\n")
	e := entries(t, id, 1)[0]
	want := "db/pg:16/" + id[:12] + "/" + img[:12] + "/" + id
	if e["CONTAINER_TAG"] != want || e["SYSLOG_IDENTIFIER"] != want {
		t.Fatalf("tag %v / %v, want %q", e["CONTAINER_TAG"], e["SYSLOG_IDENTIFIER"], want)
	}
}

// Lines are split at '\n' whatever the write boundaries; a line longer than
// 16 KiB is cut into partial entries; an unterminated last line is sent
// (partial) on Close.
func TestLinesAndPartials(t *testing.T) {
	needJournald(t)
	id := newID(t)
	l := mustNew(t, Container{ID: id, Name: "p"}, nil)
	w := l.StreamWriter("stdout")
	write(t, w, "a")
	write(t, w, "b\n\nc")
	write(t, w, "d\n")
	long := strings.Repeat("x", 2*maxLine+100)
	write(t, w, long[:5000])
	write(t, w, long[5000:]+"\n")
	write(t, w, "no newline")
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	got := entries(t, id, 7)
	type ent struct {
		msg     string
		partial bool
	}
	want := []ent{{"ab", false}, {"", false}, {"cd", false},
		{long[:maxLine], true}, {long[maxLine : 2*maxLine], true}, {long[2*maxLine:], false},
		{"no newline", true}}
	for i, e := range got {
		_, partial := e["CONTAINER_PARTIAL_MESSAGE"]
		if e["MESSAGE"] != want[i].msg || partial != want[i].partial {
			t.Errorf("entry %d: %.40v (%d bytes) partial=%v, want %.40q partial=%v", i, e["MESSAGE"], len(e["MESSAGE"].(string)), partial, want[i].msg, want[i].partial)
		}
		if partial && e["CONTAINER_PARTIAL_MESSAGE"] != "true" {
			t.Errorf("entry %d: CONTAINER_PARTIAL_MESSAGE=%v", i, e["CONTAINER_PARTIAL_MESSAGE"])
		}
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := l.StreamWriter("stdout").Write([]byte("late\n")); err == nil {
		t.Fatal("write after Close succeeded")
	}
}

func TestValidateOptions(t *testing.T) {
	good := []map[string]string{nil, {"tag": "{{.Name}}-{{.ImageName}}"}, {"labels": "a,b", "labels-regex": "^x", "env": "A", "env-regex": "B.*"}}
	for _, o := range good {
		if err := ValidateOptions(o); err != nil {
			t.Errorf("%v: %v", o, err)
		}
	}
	bad := []map[string]string{{"max-size": "1m"}, {"mode": "non-blocking"}, {"labels-regex": "("}, {"tag": "{{.Name"}, {"tag": "{{.Nope}}"}}
	for _, o := range bad {
		if err := ValidateOptions(o); !errdefs.IsInvalidParameter(err) {
			t.Errorf("%v: got %v, want an invalid parameter error", o, err)
		}
	}
}

func TestNoSocket(t *testing.T) {
	old := socketPath
	socketPath = "/nonexistent/journal/socket"
	defer func() { socketPath = old }()
	_, err := New(Container{ID: strings.Repeat("1", 64)}, nil)
	if err == nil || !strings.Contains(err.Error(), "journald is not enabled") || errdefs.ClassOf(err) != errdefs.ClassUnavailable {
		t.Fatalf("got %v", err)
	}
}

func TestFieldName(t *testing.T) {
	for in, want := range map[string]string{
		"com.example.role": "COM_EXAMPLE_ROLE", "_x": "X", "__9a-b": "A_B", "Ok_1": "OK_1",
		"___": "", "é": "", strings.Repeat("a", 70): strings.Repeat("A", 64),
	} {
		if got := fieldName(in); got != want {
			t.Errorf("fieldName(%q) = %q, want %q", in, got, want)
		}
	}
}
