package jsonfilelog

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sdengine/engine/pkg/errdefs"
)

// readEntries parses a log file line by line, failing on any invalid line.
func readEntries(t *testing.T, path string) []entry {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []entry
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var e entry
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatalf("invalid line %q: %v", sc.Text(), err)
		}
		out = append(out, e)
	}
	return out
}

func TestExactFormat(t *testing.T) {
	p := filepath.Join(t.TempDir(), "c-json.log")
	w, err := New(p, nil)
	if err != nil {
		t.Fatal(err)
	}
	ts := time.Date(2026, 12, 3, 10, 0, 0, 123456789, time.FixedZone("CET", 3600))
	if err := w.WriteMessage("stdout", []byte("hi\n"), ts); err != nil {
		t.Fatal(err)
	}
	w.Close()
	got, _ := os.ReadFile(p)
	want := `{"log":"hi\n","stream":"stdout","time":"2026-12-03T09:00:00.123456789Z"}` + "\n"
	if string(got) != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
}

// The hand-written encoder must agree byte for byte with encoding/json.
func TestJSONStringMatchesEncodingJSON(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	cases := [][]byte{[]byte("<a&b>\"\\\t\r\n\x00\x1f"), []byte("é€😀\u2028\u2029"), {0xff, 'a', 0xc3}}
	for range 2000 {
		b := make([]byte, rng.Intn(40))
		rng.Read(b)
		cases = append(cases, b)
	}
	for _, c := range cases {
		want, _ := json.Marshal(string(c))
		if got := appendJSONString(nil, c); !bytes.Equal(got, want) {
			t.Fatalf("%q: got %s want %s", c, got, want)
		}
	}
}

func TestOptions(t *testing.T) {
	// Docker's json-file driver's messages, word for word.
	for _, tc := range []struct {
		opts map[string]string
		want string
	}{
		{map[string]string{"max-size": "lots"}, "invalid size: 'lots'"},
		{map[string]string{"max-size": "-1"}, "invalid size: '-1'"},
		{map[string]string{"max-size": ""}, "invalid size: ''"},
		{map[string]string{"max-size": "1x"}, "invalid suffix: 'x'"},
		{map[string]string{"max-size": "0"}, "max-size must be a positive number"},
		{map[string]string{"max-file": "0"}, "max-file cannot be less than 1"},
		{map[string]string{"max-file": "-3"}, "max-file cannot be less than 1"},
		{map[string]string{"max-file": "x"}, `strconv.Atoi: parsing "x": invalid syntax`},
		{map[string]string{"bogus": "1"}, "unknown log opt 'bogus' for json-file log driver"},
		{map[string]string{"compress": "maybe"}, `strconv.ParseBool: parsing "maybe": invalid syntax`},
		{map[string]string{"compress": "true"}, "compress cannot be true when max-file is less than 2 or max-size is not set"},
		{map[string]string{"compress": "true", "max-size": "1m"}, "compress cannot be true when max-file is less than 2 or max-size is not set"},
		// A valid compress=true: this driver does not compress.
		{map[string]string{"compress": "true", "max-size": "1m", "max-file": "2"}, "not supported by json-file"},
	} {
		err := ValidateOptions(tc.opts)
		if !errdefs.IsInvalidParameter(err) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: got %v, want an InvalidParameter saying %q", tc.opts, err, tc.want)
		}
		if _, err := New(filepath.Join(t.TempDir(), "l"), tc.opts); !errdefs.IsInvalidParameter(err) {
			t.Errorf("New %v: got %v", tc.opts, err)
		}
	}
	for _, good := range []map[string]string{nil, {"max-size": "10m", "max-file": "3"}, {"tag": "x"}, {"compress": "false"}, {"max-size": "1.5k"}} {
		if err := ValidateOptions(good); err != nil {
			t.Errorf("%v: %v", good, err)
		}
	}
	// Sizes are Docker's: decimal units.
	if cfg, _ := parseOptions(map[string]string{"max-size": "10m"}); cfg.maxSize != 10_000_000 {
		t.Errorf("max-size 10m: %d bytes", cfg.maxSize)
	}
}

func TestAppendsOnReopen(t *testing.T) {
	p := filepath.Join(t.TempDir(), "l")
	for i := range 2 {
		w, err := New(p, nil)
		if err != nil {
			t.Fatal(err)
		}
		w.WriteMessage("stdout", fmt.Appendf(nil, "%d\n", i), time.Now())
		w.Close()
	}
	if es := readEntries(t, p); len(es) != 2 || es[0].Log != "0\n" || es[1].Log != "1\n" {
		t.Fatalf("got %+v", es)
	}
}

func TestStreamWriterSplitting(t *testing.T) {
	p := filepath.Join(t.TempDir(), "l")
	w, _ := New(p, nil)
	sw := w.StreamWriter("stderr")
	for _, chunk := range []string{"a", "b\nc", "\n", "\n\nd"} {
		if n, err := sw.Write([]byte(chunk)); err != nil || n != len(chunk) {
			t.Fatal(n, err)
		}
	}
	long := strings.Repeat("x", 40000)
	sw.Write([]byte(long))
	sw.Close()
	w.Close()
	want := []string{"ab\n", "c\n", "\n", "\n", "d" + long[:maxPartial-1], long[:maxPartial], long[:40000+1-2*maxPartial]}
	es := readEntries(t, p)
	if len(es) != len(want) {
		t.Fatalf("got %d entries, want %d", len(es), len(want))
	}
	for i, e := range es {
		if e.Log != want[i] || e.Stream != "stderr" {
			t.Errorf("entry %d: %q (%d bytes) %s", i, e.Log[:min(20, len(e.Log))], len(e.Log), e.Stream)
		}
	}
}

func TestStreamWriterLongCompleteLine(t *testing.T) {
	p := filepath.Join(t.TempDir(), "l")
	w, _ := New(p, nil)
	sw := w.StreamWriter("stdout")
	sw.Write([]byte(strings.Repeat("y", 20000) + "\n"))
	sw.Close()
	w.Close()
	es := readEntries(t, p)
	if len(es) != 2 || len(es[0].Log) != maxPartial || es[1].Log != strings.Repeat("y", 20000-maxPartial)+"\n" {
		t.Fatalf("got %d entries", len(es))
	}
}

func TestRotation(t *testing.T) {
	p := filepath.Join(t.TempDir(), "l")
	w, err := New(p, map[string]string{"max-size": "1k", "max-file": "3"})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 200 {
		if err := w.WriteMessage("stdout", fmt.Appendf(nil, "line %d\n", i), time.Now()); err != nil {
			t.Fatal(err)
		}
	}
	w.Close()
	for _, name := range []string{p, p + ".1", p + ".2"} {
		st, err := os.Stat(name)
		if err != nil || st.Size() > 1024 || st.Size() == 0 {
			t.Fatalf("%s: %v %v", name, st, err)
		}
	}
	if _, err := os.Stat(p + ".3"); !os.IsNotExist(err) {
		t.Fatalf("%s.3 should not exist: %v", p, err)
	}
	if es := readEntries(t, p); es[len(es)-1].Log != "line 199\n" {
		t.Fatalf("last entry %q", es[len(es)-1].Log)
	}
}

func TestRotationMaxFileOne(t *testing.T) {
	p := filepath.Join(t.TempDir(), "l")
	w, _ := New(p, map[string]string{"max-size": "200"})
	for i := range 50 {
		w.WriteMessage("stdout", fmt.Appendf(nil, "line %d\n", i), time.Now())
	}
	w.Close()
	if st, _ := os.Stat(p); st.Size() > 200 {
		t.Fatalf("size %d", st.Size())
	}
	if _, err := os.Stat(p + ".1"); !os.IsNotExist(err) {
		t.Fatal("max-file 1 must not keep rotations")
	}
}

// Concurrent writers (with rotation) must never interleave within an entry.
func TestConcurrentWrites(t *testing.T) {
	p := filepath.Join(t.TempDir(), "l")
	w, _ := New(p, map[string]string{"max-size": "64k", "max-file": "1000"})
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sw := w.StreamWriter(fmt.Sprint("s", g))
			for i := range 1000 {
				// Split lines across writes to exercise the pending buffer.
				fmt.Fprintf(sw, "goroutine %d ", g)
				fmt.Fprintf(sw, "line %d\n", i)
			}
			sw.Close()
		}()
	}
	wg.Wait()
	w.Close()
	files, _ := filepath.Glob(p + "*")
	count := map[string]int{}
	for _, f := range files {
		for _, e := range readEntries(t, f) {
			var g, i int
			if _, err := fmt.Sscanf(e.Log, "goroutine %d line %d\n", &g, &i); err != nil || e.Stream != fmt.Sprint("s", g) {
				t.Fatalf("bad entry %+v", e)
			}
			count[e.Stream]++
		}
	}
	for g := range 8 {
		if c := count[fmt.Sprint("s", g)]; c != 1000 {
			t.Fatalf("stream s%d: %d entries", g, c)
		}
	}
	if len(files) < 2 {
		t.Fatal("expected rotation")
	}
}

func TestWriteAfterClose(t *testing.T) {
	w, _ := New(filepath.Join(t.TempDir(), "l"), nil)
	w.Close()
	if err := w.WriteMessage("stdout", []byte("x"), time.Now()); err == nil {
		t.Fatal("write after close succeeded")
	}
}

func BenchmarkStreamWriter(b *testing.B) {
	w, err := New(filepath.Join(b.TempDir(), "l"), map[string]string{"max-size": "100m", "max-file": "2"})
	if err != nil {
		b.Fatal(err)
	}
	defer w.Close()
	sw := w.StreamWriter("stdout")
	chunk := bytes.Repeat([]byte(strings.Repeat("a", 79)+"\n"), 50) // 4000 bytes, 50 lines
	b.SetBytes(int64(len(chunk)))
	b.ResetTimer()
	for b.Loop() {
		if _, err := sw.Write(chunk); err != nil {
			b.Fatal(err)
		}
	}
}

// A big chunk through StreamWriter is batched into one write but must still
// be split across files at entry boundaries.
func TestStreamWriterBatchRotation(t *testing.T) {
	p := filepath.Join(t.TempDir(), "l")
	w, _ := New(p, map[string]string{"max-size": "1k", "max-file": "100"})
	sw := w.StreamWriter("stdout")
	var chunk []byte
	for i := range 200 {
		chunk = fmt.Appendf(chunk, "%03d %s\n", i, strings.Repeat("z", 40))
	}
	if _, err := sw.Write(chunk); err != nil {
		t.Fatal(err)
	}
	sw.Close()
	w.Close()
	files, _ := filepath.Glob(p + "*")
	total := 0
	for _, f := range files {
		st, _ := os.Stat(f)
		if st.Size() > 1024 {
			t.Fatalf("%s is %d bytes", f, st.Size())
		}
		total += len(readEntries(t, f))
	}
	if total != 200 || len(files) < 10 {
		t.Fatalf("%d entries in %d files", total, len(files))
	}
}
