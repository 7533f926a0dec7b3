package linebuf

import (
	"reflect"
	"strings"
	"testing"
)

func TestSplit(t *testing.T) {
	var got []string
	emit := func(e []byte) { got = append(got, string(e)) }
	s := New(8)
	s.Split([]byte("ab\ncd"), emit)
	s.Split([]byte("ef\n"), emit)
	s.Split([]byte("0123456789abc"), emit)
	s.Split([]byte("\n"+strings.Repeat("z", 9)+"\nend"), emit)
	s.Flush(emit)
	want := []string{"ab\n", "cdef\n", "01234567", "89abc\n", "zzzzzzzz", "z\n", "end"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %q\nwant %q", got, want)
	}
}
