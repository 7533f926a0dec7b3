package jsonfilelog

import (
	"encoding/json"
	"math/rand"
	"testing"
	"time"
)

// The fast decoder must agree with encoding/json on everything our writer
// produces, and refuse (not misread) what it does not know.
func TestDecodeFastMatchesEncodingJSON(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	alphabet := []byte("ab \"\\/\n\t\r\x00\x01\x7f\u00e9\u2028\U0001F600<>&")
	for i := 0; i < 3000; i++ {
		n := rng.Intn(40)
		line := make([]byte, 0, n)
		for j := 0; j < n; j++ {
			line = append(line, alphabet[rng.Intn(len(alphabet))])
		}
		if i%7 == 0 {
			line = append(line, 0xff, 0xfe) // invalid UTF-8
		}
		enc := appendEntry(nil, "stderr", line, time.Unix(1764756435, int64(i)))
		var want, got entry
		if err := json.Unmarshal(enc, &want); err != nil {
			t.Fatal(err)
		}
		if !decodeFast(enc, &got) {
			t.Fatalf("fast path refused %q", enc)
		}
		if got.Log != want.Log || got.Stream != want.Stream || !got.Time.Equal(want.Time) {
			t.Fatalf("%q: got %+v want %+v", enc, got, want)
		}
	}
	var e entry
	for _, other := range []string{
		`{"stream":"stdout","log":"x\n","time":"2026-12-03T10:00:00Z"}`,
		`{"log":"x\q","stream":"stdout","time":"2026-12-03T10:00:00Z"}`,
		`{"log":"x","stream":"stdout","time":"2026-12-03T10:00:00Z","attrs":{}}`,
		`{"log":"unterminated`,
	} {
		if decodeFast([]byte(other), &e) {
			t.Errorf("fast path accepted %s", other)
		}
	}
}

func BenchmarkDecode(b *testing.B) {
	line := appendEntry(nil, "stdout", []byte("a typical log line of about a hundred bytes, with nothing to escape at all...\n"), time.Now())
	b.SetBytes(int64(len(line)))
	var e entry
	for i := 0; i < b.N; i++ {
		if !decodeFast(line, &e) {
			b.Fatal("refused")
		}
	}
}
