package jsonfilelog

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sdengine/engine/daemon/logger/logfile"
	"github.com/sdengine/engine/internal/testenv"
)

// faultyFile is a log file that fills up: writes may add room more bytes,
// then write what fits and fail with ENOSPC; truncation can be made to fail.
type faultyFile struct {
	*os.File
	room     int // < 0: unlimited
	truncErr error
}

func (f *faultyFile) Write(p []byte) (int, error) {
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

func (f *faultyFile) Truncate(size int64) error {
	if f.truncErr != nil {
		return f.truncErr
	}
	return f.File.Truncate(size)
}

func inject(w *Writer, room int) *faultyFile {
	var f *faultyFile
	w.WrapFile(func(lf logfile.File) logfile.File {
		f = &faultyFile{File: lf.(*os.File), room: room}
		return f
	})
	return f
}

// wholeLines checks that every line of path is one whole entry and
// returns their "log" fields.
func wholeLines(t *testing.T, path string) []string {
	t.Helper()
	var out []string
	for _, e := range readEntries(t, path) { // fails on a torn line
		out = append(out, e.Log)
	}
	b, _ := os.ReadFile(path)
	if len(b) > 0 && b[len(b)-1] != '\n' {
		t.Fatalf("%s ends in an unfinished line: %q", path, b[max(0, len(b)-80):])
	}
	return out
}

// A write that fails part-way, in the middle of an entry, is cut back to
// the last whole entry; the entries lost are counted; the next write
// starts on a fresh line.
func TestShortWriteIsCutToWholeEntries(t *testing.T) {
	p := filepath.Join(t.TempDir(), "l")
	w, err := New(p, nil)
	if err != nil {
		t.Fatal(err)
	}
	writeN(t, w, 0, 3)
	entry := len(appendEntry(nil, "stdout", []byte("line 3\n"), t0))
	// Room for two and a half of the next batch of five entries.
	f := inject(w, 2*entry+entry/2)
	sw := w.StreamWriter("stdout")
	if _, err := sw.Write([]byte("line 3\nline 4\nline 5\nline 6\nline 7\n")); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("write on a full disk: %v, want ENOSPC", err)
	}
	if d := w.Dropped(); d != 3 {
		t.Fatalf("dropped %d entries, want 3", d)
	}
	if got := wholeLines(t, p); !eq(got, lines(0, 5)) {
		t.Fatalf("after the short write: %q", got)
	}
	// Nothing fits at all: every entry dropped, nothing written.
	if _, err := sw.Write([]byte("line 8\nline 9\n")); err == nil {
		t.Fatal("write with no room succeeded")
	}
	if d := w.Dropped(); d != 5 {
		t.Fatalf("dropped %d entries, want 5", d)
	}
	f.room = -1 // space again
	if _, err := sw.Write([]byte("line 10\n")); err != nil {
		t.Fatal(err)
	}
	w.Close()
	if got := wholeLines(t, p); !eq(got, append(lines(0, 5), "line 10\n")) {
		t.Fatalf("after the disk had room again: %q", got)
	}
}

// If the cut itself fails, the torn bytes are ended with a newline before
// the next entry: a line readers skip, and no entry glued to it.
func TestFailedCutEndsTornLine(t *testing.T) {
	p := filepath.Join(t.TempDir(), "l")
	w, _ := New(p, nil)
	writeN(t, w, 0, 2)
	f := inject(w, 10)
	f.truncErr = syscall.EIO
	if err := w.WriteMessage("stdout", []byte("line 2\n"), t0); err == nil {
		t.Fatal("short write succeeded")
	}
	f.room = -1
	writeN(t, w, 3, 5)
	w.Close()
	b, _ := os.ReadFile(p)
	ls := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	if len(ls) != 5 || len(ls[2]) != 10 {
		t.Fatalf("want 2 entries, a 10-byte fragment, 2 entries; got %q", ls)
	}
	if got := collect(t, p, ReadOptions{Tail: -1}); !eq(got, append(lines(0, 2), lines(3, 5)...)) {
		t.Fatalf("read back %q", got)
	}
	if got := collect(t, p, ReadOptions{Tail: 3}); !eq(got, lines(3, 5)) {
		t.Fatalf("tail 3 (the fragment is a line): %q", got)
	}
}

// A log left with a torn last entry (a writer that died mid-write) is cut
// when opened, so the next entry starts on its own line.
func TestReopenCutsTornEntry(t *testing.T) {
	p := filepath.Join(t.TempDir(), "l")
	w, _ := New(p, nil)
	writeN(t, w, 0, 2)
	w.Close()
	f, _ := os.OpenFile(p, os.O_WRONLY|os.O_APPEND, 0)
	f.WriteString(`{"log":"line 2\n","str`)
	f.Close()
	w, err := New(p, nil)
	if err != nil {
		t.Fatal(err)
	}
	writeN(t, w, 3, 4)
	w.Close()
	if got := wholeLines(t, p); !eq(got, []string{"line 0\n", "line 1\n", "line 3\n"}) {
		t.Fatalf("got %q", got)
	}
	// A file of nothing but a torn entry becomes empty.
	os.WriteFile(p, []byte(`{"log":"x`), 0o640)
	if w, err = New(p, nil); err != nil {
		t.Fatal(err)
	}
	w.Close()
	if st, _ := os.Stat(p); st.Size() != 0 {
		t.Fatalf("torn-only log is %d bytes", st.Size())
	}
}

// On a real full file system: a chatty stream fills it, writes fail and
// are counted, and once there is room again the log goes on, with only
// whole lines throughout.
func TestFullTmpfsLeavesWholeLines(t *testing.T) {
	dir := testenv.SmallTmpfs(t, 64<<10)
	p := filepath.Join(dir, "c-json.log")
	// Another file on the disk, removed later to make room.
	filler := filepath.Join(dir, "filler")
	if err := os.WriteFile(filler, make([]byte, 16<<10), 0o600); err != nil {
		t.Fatal(err)
	}
	w, err := New(p, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	sw := w.StreamWriter("stdout")
	var chunk bytes.Buffer
	for i := 0; i < 37; i++ { // 37 lines of 45 bytes: entries straddle pages
		fmt.Fprintf(&chunk, "%04d %s\n", i, strings.Repeat("y", 39))
	}
	var failed int
	for i := 0; i < 200; i++ {
		if _, err := sw.Write(chunk.Bytes()); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatal(err)
			}
			failed++
		}
	}
	if failed == 0 {
		t.Fatal("the disk never filled up")
	}
	before := wholeLines(t, p)
	written := len(before)
	if want := uint64(200*37 - written); w.Dropped() != want {
		t.Fatalf("%d entries written of %d, dropped %d: want %d dropped", written, 200*37, w.Dropped(), want)
	}
	t.Logf("64 KiB tmpfs: %d lines written, %d dropped in %d failed writes", written, w.Dropped(), failed)

	// Room again (another container's log removed).
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	if _, err := sw.Write([]byte("again\n")); err != nil {
		t.Fatal(err)
	}
	if got := wholeLines(t, p); !eq(got, append(before, "again\n")) {
		t.Fatalf("after freeing: %q", got)
	}
}

// A follower that read part of an entry the writer then cut off goes on
// with the entries written after it, none lost or glued to the fragment.
func TestFollowerSkipsCutFragment(t *testing.T) {
	p := filepath.Join(t.TempDir(), "l")
	w, _ := New(p, nil)
	defer w.Close()
	writeN(t, w, 0, 2)
	st, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	f := inject(w, 20)
	f.truncErr = errors.New("not yet") // hold the fragment until the follower saw it

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	done := make(chan struct{})
	got, errc := follow(ctx, p, -1, done)
	for _, want := range lines(0, 2) {
		if g := <-got; g != want {
			t.Fatalf("got %q want %q", g, want)
		}
	}
	if err := w.WriteMessage("stdout", []byte("lost\n"), t0); err == nil {
		t.Fatal("short write succeeded")
	}
	time.Sleep(300 * time.Millisecond) // the follower reads the fragment
	f.truncErr, f.room = nil, -1
	if err := f.File.Truncate(st.Size()); err != nil { // the writer's cut, done for it
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond) // and sees it cut
	writeN(t, w, 2, 4)
	for _, want := range lines(2, 4) {
		select {
		case g := <-got:
			if g != want {
				t.Fatalf("got %q want %q", g, want)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("follower did not deliver %q", want)
		}
	}
	close(done)
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
}
