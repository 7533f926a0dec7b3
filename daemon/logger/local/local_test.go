package local

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/docker/docker/api/types/plugins/logdriver"

	"github.com/sdengine/engine/daemon/logger/logfile"
)

// records decodes a local-format file with the generated decoder of the
// docker module (the length-prefixed stream Docker's own reader walks),
// checking each trailing length on the way.
func records(t *testing.T, b []byte) []logdriver.LogEntry {
	t.Helper()
	var out []logdriver.LogEntry
	for len(b) > 0 {
		if len(b) < 2*lenSize {
			t.Fatalf("%d stray bytes at the end", len(b))
		}
		n := int(binary.BigEndian.Uint32(b))
		if len(b) < n+2*lenSize || int(binary.BigEndian.Uint32(b[lenSize+n:])) != n {
			t.Fatalf("record of %d bytes is not whole", n)
		}
		var e logdriver.LogEntry
		if err := logdriver.NewLogEntryDecoder(bytes.NewReader(b[:lenSize+n])).Decode(&e); err != nil {
			t.Fatal(err)
		}
		out = append(out, e)
		b = b[n+2*lenSize:]
	}
	return out
}

func fileRecords(t *testing.T, path string) []logdriver.LogEntry {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if strings.HasSuffix(path, ".gz") {
		zr, err := gzip.NewReader(bytes.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		if b, err = io.ReadAll(zr); err != nil {
			t.Fatal(err)
		}
	}
	return records(t, b)
}

func collect(t *testing.T, path string, opts logfile.ReadOptions) []string {
	t.Helper()
	var out []string
	err := Read(context.Background(), path, opts, nil, func(m logfile.Message) error {
		out = append(out, m.Stream+":"+string(m.Line))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func lines(from, to int) []string {
	var out []string
	for i := from; i < to; i++ {
		out = append(out, fmt.Sprintf("stdout:line %d\n", i))
	}
	return out
}

func writeN(t testing.TB, w *Writer, from, to int) {
	t.Helper()
	sw := w.StreamWriter("stdout")
	for i := from; i < to; i++ {
		if _, err := fmt.Fprintf(sw, "line %d\n", i); err != nil {
			t.Fatal(err)
		}
	}
}

func eq(a, b []string) bool { return strings.Join(a, "|") == strings.Join(b, "|") && len(a) == len(b) }

// The bytes on disk are Docker's: length, LogEntry, length; the newline is
// not stored; an unfinished line is a partial entry not marked last.
func TestDockerFormat(t *testing.T) {
	p := filepath.Join(t.TempDir(), "container.log")
	w, err := New(p, nil)
	if err != nil {
		t.Fatal(err)
	}
	out, errw := w.StreamWriter("stdout"), w.StreamWriter("stderr")
	before := time.Now()
	io.WriteString(out, "hello\nwor")
	io.WriteString(errw, "oops\n")
	io.WriteString(out, "ld\nno newline")
	out.Close()
	errw.Close()
	w.Close()
	es := fileRecords(t, p)
	if len(es) != 4 {
		t.Fatalf("%d records: %+v", len(es), es)
	}
	want := []struct {
		src, line string
		partial   bool
	}{{"stdout", "hello", false}, {"stderr", "oops", false}, {"stdout", "world", false}, {"stdout", "no newline", true}}
	for i, e := range es {
		if e.Source != want[i].src || string(e.Line) != want[i].line || e.Partial != want[i].partial {
			t.Errorf("record %d: %+v, want %+v", i, e, want[i])
		}
		if ts := time.Unix(0, e.TimeNano); ts.Before(before) || ts.After(time.Now()) {
			t.Errorf("record %d: time %v", i, ts)
		}
	}
	if md := es[3].PartialLogMetadata; md == nil || md.Last || md.Ordinal != 1 || len(md.Id) != 64 {
		t.Errorf("partial metadata %+v", md)
	}
	got := collect(t, p, logfile.ReadOptions{Tail: -1})
	if !eq(got, []string{"stdout:hello\n", "stderr:oops\n", "stdout:world\n", "stdout:no newline"}) {
		t.Fatalf("read back %q", got)
	}
}

// A line longer than the copier's buffer is stored as partial pieces with
// one ID, rising ordinals and the first piece's time, the last one marked
// Last; read back it is the line again.
func TestLongLineIsPartialEntries(t *testing.T) {
	p := filepath.Join(t.TempDir(), "container.log")
	w, _ := New(p, nil)
	sw := w.StreamWriter("stdout")
	long := strings.Repeat("x", 2*maxPartial+100)
	io.WriteString(sw, long+"\nshort\n")
	w.Close()
	es := fileRecords(t, p)
	if len(es) != 4 {
		t.Fatalf("%d records", len(es))
	}
	id := es[0].PartialLogMetadata.GetId()
	for i, e := range es[:3] {
		md := e.PartialLogMetadata
		if !e.Partial || md.GetId() != id || md.GetOrdinal() != int32(i+1) || md.GetLast() != (i == 2) || e.TimeNano != es[0].TimeNano {
			t.Errorf("piece %d: partial=%v %+v", i, e.Partial, md)
		}
	}
	if es[3].Partial || string(es[3].Line) != "short" {
		t.Errorf("after the long line: %+v", es[3])
	}
	got := collect(t, p, logfile.ReadOptions{Tail: -1})
	if strings.Join(got, "") != "stdout:"+long[:maxPartial]+"stdout:"+long[maxPartial:2*maxPartial]+"stdout:"+long[2*maxPartial:]+"\nstdout:short\n" {
		t.Fatalf("read back %d entries", len(got))
	}
}

// Records written by Docker's own encoder (length + protobuf, to which
// Docker's driver adds the trailing length) are read.
func TestReadsDockerEncoderOutput(t *testing.T) {
	p := filepath.Join(t.TempDir(), "container.log")
	var b bytes.Buffer
	for i := range 3 {
		e := &logdriver.LogEntry{Source: "stderr", TimeNano: int64(i) * 1e9, Line: fmt.Appendf(nil, "line %d", i)}
		var one bytes.Buffer
		if err := logdriver.NewLogEntryEncoder(&one).Encode(e); err != nil {
			t.Fatal(err)
		}
		b.Write(one.Bytes())
		b.Write(one.Bytes()[:lenSize])
	}
	os.WriteFile(p, b.Bytes(), 0o640)
	if got := collect(t, p, logfile.ReadOptions{Tail: 2}); !eq(got, []string{"stderr:line 1\n", "stderr:line 2\n"}) {
		t.Fatalf("got %q", got)
	}
}

func TestOptions(t *testing.T) {
	for _, tc := range []struct {
		opts map[string]string
		err  string
	}{
		{nil, ""},
		{map[string]string{"max-size": "10m", "max-file": "3", "compress": "false"}, ""},
		{map[string]string{"max-file": "1", "compress": "false"}, ""},
		{map[string]string{"max-file": "1"}, "compression cannot be enabled when max file count is 1"},
		{map[string]string{"max-file": "-1"}, "max file count cannot be less than 0"},
		{map[string]string{"max-size": "-1"}, "invalid value for max-size: -1"},
		{map[string]string{"max-size": "a lot"}, "invalid value for max-size: a lot"},
		{map[string]string{"compress": "maybe"}, "error reading compress log option"},
		{map[string]string{"labels": "a"}, "unknown log opt 'labels' for log driver local"},
	} {
		err := ValidateOptions(tc.opts)
		if (err == nil) != (tc.err == "") || (err != nil && !strings.Contains(err.Error(), tc.err)) {
			t.Errorf("%v: %v, want %q", tc.opts, err, tc.err)
		}
	}
	cfg, _ := parseOptions(nil)
	if cfg.MaxSize != 20<<20 || cfg.MaxFile != 5 || !cfg.Compress {
		t.Errorf("defaults %+v", cfg)
	}
}

// Rotation keeps max-file files, the rotated ones gzip-compressed with the
// last entry's time in the header; every entry stays readable, tail
// reaches into the compressed files.
func TestRotationCompressedAndTail(t *testing.T) {
	p := filepath.Join(t.TempDir(), "container.log")
	w, err := New(p, map[string]string{"max-size": "1k", "max-file": "4"})
	if err != nil {
		t.Fatal(err)
	}
	writeN(t, w, 0, 200)
	w.Close()
	for i := 1; i <= 3; i++ {
		if _, err := os.Stat(logfile.RotatedName(p, i) + ".gz"); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(logfile.RotatedName(p, i)); !os.IsNotExist(err) {
			t.Fatalf("uncompressed %d left: %v", i, err)
		}
	}
	if _, err := os.Stat(p + ".4.gz"); !os.IsNotExist(err) {
		t.Fatal("more than max-file files")
	}
	f, _ := os.Open(p + ".1.gz")
	zr, err := gzip.NewReader(f)
	if err != nil || !bytes.Contains(zr.Header.Extra, []byte(`"lastTime"`)) {
		t.Fatalf("gzip header extra %q: %v", zr.Header.Extra, err)
	}
	f.Close()
	all := collect(t, p, logfile.ReadOptions{Tail: -1})
	n := len(all)
	if n < 40 || !eq(all, lines(200-n, 200)) {
		t.Fatalf("read %d entries: %q...", n, all[:min(3, n)])
	}
	cur := len(fileRecords(t, p))
	if got := collect(t, p, logfile.ReadOptions{Tail: cur + 5}); !eq(got, lines(200-cur-5, 200)) {
		t.Fatalf("tail into a compressed file: %q", got)
	}
	if got := collect(t, p, logfile.ReadOptions{Tail: 0}); len(got) != 0 {
		t.Fatalf("tail 0: %q", got)
	}
}

func TestRotationUncompressedAndMaxFileOne(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "container.log")
	w, _ := New(p, map[string]string{"max-size": "1k", "max-file": "3", "compress": "false"})
	writeN(t, w, 0, 200)
	w.Close()
	for _, name := range []string{p, p + ".1", p + ".2"} {
		if st, err := os.Stat(name); err != nil || st.Size() > 1024 {
			t.Fatalf("%s: %v", name, err)
		}
	}
	if got := collect(t, p, logfile.ReadOptions{Tail: 3}); !eq(got, lines(197, 200)) {
		t.Fatalf("tail 3: %q", got)
	}
	p1 := filepath.Join(dir, "one.log")
	w, _ = New(p1, map[string]string{"max-size": "200", "max-file": "1", "compress": "false"})
	writeN(t, w, 0, 50)
	w.Close()
	if _, err := os.Stat(p1 + ".1"); !os.IsNotExist(err) {
		t.Fatal("max-file 1 kept a rotation")
	}
}

func TestSinceUntil(t *testing.T) {
	p := filepath.Join(t.TempDir(), "container.log")
	w, _ := New(p, nil)
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range 5 {
		e := &logdriver.LogEntry{Source: "stdout", TimeNano: t0.Add(time.Duration(i) * time.Second).UnixNano(), Line: fmt.Appendf(nil, "line %d", i)}
		b, _ := appendRecord(nil, e)
		if err := w.Write(b, []int{len(b)}, t0); err != nil {
			t.Fatal(err)
		}
	}
	w.Close()
	got := collect(t, p, logfile.ReadOptions{Tail: -1, Since: t0.Add(time.Second), Until: t0.Add(3 * time.Second)})
	if !eq(got, lines(1, 4)) {
		t.Fatalf("got %q", got)
	}
}

// A log left with a torn last record (a writer that died mid-write) is
// cut when opened, and read back without it.
func TestReopenCutsTornRecord(t *testing.T) {
	p := filepath.Join(t.TempDir(), "container.log")
	w, _ := New(p, nil)
	writeN(t, w, 0, 3)
	w.Close()
	b, _ := os.ReadFile(p)
	os.WriteFile(p, append(b, b[:7]...), 0o640)
	if got := collect(t, p, logfile.ReadOptions{Tail: 2}); !eq(got, lines(1, 3)) {
		t.Fatalf("tail past a torn end: %q", got)
	}
	w, err := New(p, nil)
	if err != nil {
		t.Fatal(err)
	}
	writeN(t, w, 3, 4)
	w.Close()
	if got := collect(t, p, logfile.ReadOptions{Tail: -1}); !eq(got, lines(0, 4)) {
		t.Fatalf("got %q", got)
	}
}

// fullFile takes room more bytes, then writes what fits and fails as a
// full disk does.
type fullFile struct {
	*os.File
	room int
}

func (f *fullFile) Write(p []byte) (int, error) {
	if f.room < 0 || len(p) <= f.room {
		n, err := f.File.Write(p)
		if f.room >= 0 {
			f.room -= n
		}
		return n, err
	}
	n, _ := f.File.Write(p[:f.room])
	f.room = 0
	return n, syscall.ENOSPC
}

// On a full disk the file is cut back to its last whole record: no record
// is ever torn, the lost ones are counted.
func TestFullDiskLeavesWholeRecords(t *testing.T) {
	p := filepath.Join(t.TempDir(), "container.log")
	w, _ := New(p, nil)
	writeN(t, w, 0, 2)
	var f *fullFile
	w.WrapFile(func(lf logfile.File) logfile.File { f = &fullFile{File: lf.(*os.File), room: 30}; return f })
	sw := w.StreamWriter("stdout")
	if _, err := io.WriteString(sw, "line 2\nline 3\nline 4\n"); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("write on a full disk: %v", err)
	}
	fileRecords(t, p) // fails on a torn record
	f.room = -1
	io.WriteString(sw, "line 5\n")
	w.Close()
	got := collect(t, p, logfile.ReadOptions{Tail: -1})
	if uint64(6-len(got)) != w.Dropped() || got[len(got)-1] != "stdout:line 5\n" {
		t.Fatalf("got %q, dropped %d", got, w.Dropped())
	}
}

// A follower sees entries as they come, across rotations (into compressed
// files), and ends when the writer is done.
func TestFollowAcrossRotation(t *testing.T) {
	p := filepath.Join(t.TempDir(), "container.log")
	w, _ := New(p, map[string]string{"max-size": "300", "max-file": "50"})
	writeN(t, w, 0, 5)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	done := make(chan struct{})
	got := make(chan string, 1000)
	errc := make(chan error, 1)
	go func() {
		errc <- Read(ctx, p, logfile.ReadOptions{Follow: true, Tail: 2}, done, func(m logfile.Message) error {
			got <- m.Stream + ":" + string(m.Line)
			return nil
		})
	}()
	expect := func(from, to int) {
		t.Helper()
		for _, want := range lines(from, to) {
			select {
			case g := <-got:
				if g != want {
					t.Fatalf("got %q want %q", g, want)
				}
			case <-ctx.Done():
				t.Fatalf("follower did not deliver %q", want)
			}
		}
	}
	expect(3, 5)
	for i := 5; i < 100; i += 5 {
		writeN(t, w, i, i+5)
		expect(i, i+5)
	}
	writeN(t, w, 100, 120)
	w.Close()
	close(done)
	expect(100, 120)
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(p + ".3.gz"); err != nil {
		t.Fatal("no rotation happened")
	}
}
