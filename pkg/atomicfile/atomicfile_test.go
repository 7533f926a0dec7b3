package atomicfile

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/sdengine/engine/internal/testenv"
)

// record is JSON of about n bytes, numbered.
func record(i, n int) []byte {
	b, _ := json.Marshal(map[string]any{"n": i, "fill": strings.Repeat("r", max(n-20, 0))})
	return b
}

func readRecord(t *testing.T, path string) int {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var v struct{ N int }
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("%s is not one JSON value: %v", path, err)
	}
	return v.N
}

func TestWriteReservedKeepsSizeAndSpare(t *testing.T) {
	path := filepath.Join(t.TempDir(), "rec.json")
	if err := WriteReserved(path, record(1, 1000), 0o600); err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	sp, err := os.Stat(SpareName(path))
	if err != nil {
		t.Fatalf("no spare after the first write: %v", err)
	}
	if st.Size() != sp.Size() || st.Size() < 1000 || st.Mode().Perm() != 0o600 || sp.Mode().Perm() != 0o600 {
		t.Fatalf("file %d bytes %v, spare %d bytes %v", st.Size(), st.Mode(), sp.Size(), sp.Mode())
	}
	for i := 2; i < 6; i++ {
		if err := WriteReserved(path, record(i, 900+40*i), 0o600); err != nil {
			t.Fatal(err)
		}
		if n := readRecord(t, path); n != i {
			t.Fatalf("record %d read back as %d", i, n)
		}
		// The spare holds the previous record: the blocks are reused.
		if n := readRecord(t, SpareName(path)); n != i-1 {
			t.Fatalf("spare after write %d holds %d", i, n)
		}
		if now, _ := os.Stat(path); now.Size() != st.Size() {
			t.Fatalf("size changed from %d to %d", st.Size(), now.Size())
		}
	}
	// Grown past the spare: written anew, with a bigger spare.
	if err := WriteReserved(path, record(9, 4000), 0o600); err != nil {
		t.Fatal(err)
	}
	st, _ = os.Stat(path)
	sp, _ = os.Stat(SpareName(path))
	if readRecord(t, path) != 9 || st.Size() < 4000 || sp.Size() != st.Size() {
		t.Fatalf("after growing: file %d bytes, spare %d", st.Size(), sp.Size())
	}
	// Cut in half (what a test of torn records does), the data is cut too.
	b, _ := os.ReadFile(path)
	if json.Valid(b[:len(b)/2]) {
		t.Fatal("the first half of a reserved file is valid JSON: the padding is too long")
	}
}

// On a full file system a reserved record can be rewritten any number of
// times; an ordinary write fails and leaves the old file whole.
func TestWriteReservedOnFullDisk(t *testing.T) {
	dir := testenv.SmallTmpfs(t, 256<<10)
	path := filepath.Join(dir, "rec.json")
	plain := filepath.Join(dir, "plain.json")
	if err := WriteReserved(path, record(0, 2000), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := Write(plain, record(0, 2000), 0o600); err != nil {
		t.Fatal(err)
	}
	testenv.FillDisk(t, dir, 1<<20)

	if err := Write(plain, record(1, 2000), 0o600); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("plain write on a full disk: %v, want ENOSPC", err)
	}
	if n := readRecord(t, plain); n != 0 {
		t.Fatalf("failed plain write left record %d", n)
	}
	for i := 1; i <= 50; i++ {
		if err := WriteReserved(path, record(i, 1800+i*10), 0o600); err != nil {
			t.Fatalf("reserved write %d on a full disk: %v", i, err)
		}
		if n := readRecord(t, path); n != i {
			t.Fatalf("reserved write %d read back as %d", i, n)
		}
	}
	// Too big for the spare: fails, and the last record stays.
	if err := WriteReserved(path, record(99, 8000), 0o600); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("oversized reserved write on a full disk: %v, want ENOSPC", err)
	}
	if n := readRecord(t, path); n != 50 {
		t.Fatalf("failed reserved write left record %d", n)
	}
	if matches, _ := filepath.Glob(filepath.Join(dir, ".*.tmp-*")); len(matches) > 0 {
		t.Fatalf("temporary files left: %v", matches)
	}
}

// Reserve ahead of the first write: the exit status of a container that
// exits on a full disk.
func TestReserveThenWriteOnFullDisk(t *testing.T) {
	dir := testenv.SmallTmpfs(t, 128<<10)
	path := filepath.Join(dir, "exit.json")
	if err := Reserve(path, 0, 0o600); err != nil {
		t.Fatal(err)
	}
	testenv.FillDisk(t, dir, 1<<20)
	want := []byte(`{"code":0,"exitedAt":"2024-01-02T03:04:05Z"}`)
	if err := WriteReserved(path, want, 0o600); err != nil {
		t.Fatalf("first reserved write on a full disk: %v", err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(bytes.TrimRight(b, " \n"), want) || !json.Valid(b) {
		t.Fatalf("exit.json: %q", b)
	}
	if _, err := os.Stat(SpareName(path)); !os.IsNotExist(err) {
		t.Fatalf("the spare is still there: %v", err)
	}
	// The spare is spent; the next write needs room, fails, and keeps the file.
	if err := WriteReserved(path, []byte(`{"code":1}`), 0o600); err == nil {
		t.Fatal("a second write without a spare succeeded on a full disk")
	}
	if b2, _ := os.ReadFile(path); !bytes.Equal(b, b2) {
		t.Fatalf("failed write changed exit.json to %q", b2)
	}
}

func TestPad(t *testing.T) {
	for _, tc := range []struct {
		data string
		size int
		want string
	}{
		{"{}", 5, "{}  \n"},
		{"{}", 3, "{}\n"},
		{"{}", 2, "{}"},
		{"{}", 1, "{}"},
		{"", 2, " \n"},
	} {
		if got := string(pad([]byte(tc.data), tc.size)); got != tc.want {
			t.Errorf("pad(%q, %d) = %q, want %q", tc.data, tc.size, got, tc.want)
		}
	}
	if n := reserveSize(10); n != minReserve {
		t.Errorf("reserveSize(10) = %d", n)
	}
	if n := reserveSize(3000); n != 4500 {
		t.Errorf("reserveSize(3000) = %d", n)
	}
}
