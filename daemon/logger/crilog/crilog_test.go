package crilog

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sdengine/engine/pkg/errdefs"
)

// recordRE is a record as the kubelet parses it: RFC3339Nano time, stream,
// tag, one space, content.
var recordRE = regexp.MustCompile(`^(\S+) (stdout|stderr) ([PF]) (.*)$`)

type rec struct {
	t       time.Time
	stream  string
	tag     string
	content string
}

func readRecords(t *testing.T, path string) []rec {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []rec
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		m := recordRE.FindStringSubmatch(sc.Text())
		if m == nil {
			t.Fatalf("not a CRI record: %.80q", sc.Text())
		}
		ts, err := time.Parse(time.RFC3339Nano, m[1])
		if err != nil {
			t.Fatalf("time %q: %v", m[1], err)
		}
		if !strings.HasSuffix(m[1], "Z") {
			t.Fatalf("time %q is not UTC", m[1])
		}
		out = append(out, rec{ts, m[2], m[3], m[4]})
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func newWriter(t *testing.T) (*Writer, string) {
	t.Helper()
	p := filepath.Join(t.TempDir(), "pods", "ns_pod_uid", "ctr", "0.log")
	w, err := New(map[string]string{"path": p})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	return w, p
}

func write(t *testing.T, w interface{ Write([]byte) (int, error) }, s string) {
	t.Helper()
	if n, err := w.Write([]byte(s)); err != nil || n != len(s) {
		t.Fatalf("write: %d, %v", n, err)
	}
}

func TestFormat(t *testing.T) {
	before := time.Now()
	w, p := newWriter(t)
	out, errw := w.StreamWriter("stdout"), w.StreamWriter("stderr")
	write(t, out, "one\ntw")
	write(t, errw, "oops\n")
	write(t, out, "o\n\nend")
	out.Close()
	errw.Close()

	st, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o640 {
		t.Fatalf("mode %v, want 0640", st.Mode().Perm())
	}
	got := readRecords(t, p)
	want := []rec{
		{stream: "stdout", tag: "F", content: "one"},
		{stream: "stderr", tag: "F", content: "oops"},
		{stream: "stdout", tag: "F", content: "two"},
		{stream: "stdout", tag: "F", content: ""},
		{stream: "stdout", tag: "P", content: "end"},
	}
	if len(got) != len(want) {
		t.Fatalf("got %d records, want %d: %+v", len(got), len(want), got)
	}
	for i := range want {
		g := got[i]
		if g.stream != want[i].stream || g.tag != want[i].tag || g.content != want[i].content {
			t.Errorf("record %d: %+v, want %+v", i, g, want[i])
		}
		if g.t.Before(before.Add(-time.Second)) || g.t.After(time.Now().Add(time.Second)) {
			t.Errorf("record %d: time %v not now", i, g.t)
		}
	}
	// An empty line still has the space after its tag, as the kubelet
	// requires.
	b, _ := os.ReadFile(p)
	if !strings.Contains(string(b), " stdout F \n") {
		t.Fatalf("empty line not written as `F `: %q", b)
	}
}

func TestSplit16K(t *testing.T) {
	w, p := newWriter(t)
	s := w.StreamWriter("stdout")
	long := strings.Repeat("a", 2*MaxContent+100)
	exact := strings.Repeat("b", MaxContent)
	write(t, s, long+"\n")
	// Exactly MaxContent, sent in two writes: still one F record.
	write(t, s, exact[:10])
	write(t, s, exact[10:]+"\n")
	// Unterminated and longer than MaxContent at the end of the stream.
	write(t, s, strings.Repeat("c", MaxContent+5))
	s.Close()

	got := readRecords(t, p)
	want := []struct {
		tag string
		n   int
		c   byte
	}{{"P", MaxContent, 'a'}, {"P", MaxContent, 'a'}, {"F", 100, 'a'}, {"F", MaxContent, 'b'}, {"P", MaxContent, 'c'}, {"P", 5, 'c'}}
	if len(got) != len(want) {
		t.Fatalf("got %d records, want %d", len(got), len(want))
	}
	for i, wnt := range want {
		if got[i].tag != wnt.tag || len(got[i].content) != wnt.n || strings.Trim(got[i].content, string(wnt.c)) != "" {
			t.Errorf("record %d: tag %s, %d bytes; want %s, %d of %c", i, got[i].tag, len(got[i].content), wnt.tag, wnt.n, wnt.c)
		}
	}
}

// The kubelet's rotation: rename, then reopen. The old file keeps what
// was written before, the new one gets the rest.
func TestReopenAfterRename(t *testing.T) {
	w, p := newWriter(t)
	s := w.StreamWriter("stdout")
	write(t, s, "before\nhalf")
	rotated := p + ".20261205-083000"
	if err := os.Rename(p, rotated); err != nil {
		t.Fatal(err)
	}
	if err := w.Reopen(); err != nil {
		t.Fatal(err)
	}
	write(t, s, "-line\nafter\n")
	s.Close()
	old := readRecords(t, rotated)
	if len(old) != 1 || old[0].content != "before" {
		t.Fatalf("rotated file: %+v", old)
	}
	cur := readRecords(t, p)
	if len(cur) != 2 || cur[0].content != "half-line" || cur[1].content != "after" {
		t.Fatalf("new file: %+v", cur)
	}
	st, err := os.Stat(p)
	if err != nil || st.Mode().Perm() != 0o640 {
		t.Fatalf("new file: %v, %v", st, err)
	}
}

// Rotations while two streams write: every line is in exactly one file.
func TestReopenLosesNothing(t *testing.T) {
	w, p := newWriter(t)
	const perStream = 3000
	var wg sync.WaitGroup
	for _, stream := range []string{"stdout", "stderr"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s := w.StreamWriter(stream)
			defer s.Close()
			for i := range perStream {
				if _, err := fmt.Fprintf(s, "%s %d\n", stream, i); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	var files []string
	stop := make(chan struct{})
	rotated := make(chan struct{})
	go func() {
		defer close(rotated)
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			name := fmt.Sprintf("%s.%d", p, i)
			if err := os.Rename(p, name); err != nil {
				t.Error(err)
				return
			}
			files = append(files, name)
			if err := w.Reopen(); err != nil {
				t.Error(err)
				return
			}
			time.Sleep(time.Millisecond)
		}
	}()
	wg.Wait()
	close(stop)
	<-rotated
	files = append(files, p)
	seen := map[string]int{}
	for _, f := range files {
		for _, r := range readRecords(t, f) {
			seen[r.stream+"/"+r.content]++
		}
	}
	if len(files) < 3 {
		t.Logf("only %d files", len(files))
	}
	for _, stream := range []string{"stdout", "stderr"} {
		for i := range perStream {
			if n := seen[fmt.Sprintf("%s/%s %d", stream, stream, i)]; n != 1 {
				t.Fatalf("%s line %d found %d times", stream, i, n)
			}
		}
	}
	t.Logf("%d lines over %d files", 2*perStream, len(files))
}

func TestReopenClosed(t *testing.T) {
	w, p := newWriter(t)
	w.Close()
	os.Remove(p)
	if err := w.Reopen(); !errdefs.IsConflict(err) {
		t.Fatalf("reopen after close: %v", err)
	}
	if _, err := os.Stat(p); !os.IsNotExist(err) {
		t.Fatalf("reopen after close made the file: %v", err)
	}
}

func TestBadOptions(t *testing.T) {
	for _, tc := range []struct {
		opts map[string]string
		want string
	}{
		{nil, "'path' is required"},
		{map[string]string{"path": ""}, "'path' is required"},
		{map[string]string{"path": "x/0.log"}, "must be absolute"},
		{map[string]string{"path": "/tmp/x.log", "max-size": "1m"}, "unknown log opt 'max-size' for cri log driver"},
	} {
		err := ValidateOptions(tc.opts)
		if !errdefs.IsInvalidParameter(err) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v, want InvalidParameter with %q", tc.opts, err, tc.want)
		}
		if _, err := New(tc.opts); !errdefs.IsInvalidParameter(err) {
			t.Errorf("New(%v): %v", tc.opts, err)
		}
	}
}

func readAll(t *testing.T, p string, opts ReadOptions) []Message {
	t.Helper()
	var got []Message
	done := make(chan struct{})
	close(done)
	err := Read(context.Background(), p, opts, done, func(m Message) error {
		m.Line = append([]byte(nil), m.Line...)
		got = append(got, m)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// Reading back joins a line's pieces; tail counts lines, not records.
func TestReadBack(t *testing.T) {
	w, p := newWriter(t)
	out, errw := w.StreamWriter("stdout"), w.StreamWriter("stderr")
	long := strings.Repeat("x", MaxContent*2+7)
	write(t, out, "first\n")
	write(t, errw, "err one\n")
	write(t, out, long+"\n")
	write(t, out, "last, no newline")
	out.Close()
	errw.Close()
	// A corrupt line is skipped, not the end of the read.
	f, _ := os.OpenFile(p, os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString("garbage\n")
	f.Close()
	w.StreamWriter("stderr").Write([]byte("err two\n"))

	got := readAll(t, p, ReadOptions{Tail: -1})
	want := []struct{ stream, line string }{
		{"stdout", "first\n"}, {"stderr", "err one\n"}, {"stdout", long + "\n"},
		{"stdout", "last, no newline"}, {"stderr", "err two\n"},
	}
	if len(got) != len(want) {
		t.Fatalf("got %d messages, want %d", len(got), len(want))
	}
	for i := range want {
		if got[i].Stream != want[i].stream || string(got[i].Line) != want[i].line {
			t.Errorf("message %d: %s %.40q, want %s %.40q", i, got[i].Stream, got[i].Line, want[i].stream, want[i].line)
		}
	}
	tail := readAll(t, p, ReadOptions{Tail: 2})
	if len(tail) != 3 || string(tail[0].Line) != long+"\n" || string(tail[1].Line) != "last, no newline" || string(tail[2].Line) != "err two\n" {
		t.Fatalf("tail 2: %d messages", len(tail))
	}
}

// The reader follows the file across the kubelet's rotation.
func TestFollowAcrossReopen(t *testing.T) {
	w, p := newWriter(t)
	s := w.StreamWriter("stdout")
	write(t, s, "a\n")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	done := make(chan struct{})
	lines := make(chan string, 10)
	readErr := make(chan error, 1)
	go func() {
		readErr <- Read(ctx, p, ReadOptions{Follow: true, Tail: -1}, done, func(m Message) error {
			lines <- string(m.Line)
			return nil
		})
	}()
	if l := <-lines; l != "a\n" {
		t.Fatalf("first line %q", l)
	}
	write(t, s, "b\n")
	if err := os.Rename(p, p+".20261205-083000"); err != nil {
		t.Fatal(err)
	}
	if err := w.Reopen(); err != nil {
		t.Fatal(err)
	}
	write(t, s, "c\n")
	for _, want := range []string{"b\n", "c\n"} {
		select {
		case l := <-lines:
			if l != want {
				t.Fatalf("got %q, want %q", l, want)
			}
		case <-ctx.Done():
			t.Fatalf("no %q", want)
		}
	}
	close(done)
	if err := <-readErr; err != nil {
		t.Fatal(err)
	}
}

// A log whose last record is a P one (the output ended without a
// newline): that is the last line for tail.
func TestTailUnfinished(t *testing.T) {
	w, p := newWriter(t)
	s := w.StreamWriter("stdout")
	write(t, s, "one\ntwo\nthree")
	s.Close()
	for n, want := range map[int]string{0: "", 1: "three", 2: "two\nthree", 5: "one\ntwo\nthree"} {
		var got string
		for _, m := range readAll(t, p, ReadOptions{Tail: n}) {
			got += string(m.Line)
		}
		if got != want {
			t.Errorf("tail %d: %q, want %q", n, got, want)
		}
	}
}
