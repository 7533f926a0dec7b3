package daemon

import (
	"bytes"
	"io"
	"testing"
	"time"
)

func TestDetachReader(t *testing.T) {
	keys, err := parseDetachKeys("")
	if err != nil || !bytes.Equal(keys, []byte{16, 17}) {
		t.Fatalf("default keys %v %v", keys, err)
	}
	if _, err := parseDetachKeys("ctrl-"); err == nil {
		t.Fatal("bad keys accepted")
	}
	// A broken sequence is passed on; the full one ends the stream.
	release := make(chan struct{})
	detached := make(chan struct{})
	r := &detachReader{src: bytes.NewReader([]byte("ab\x10c\x10\x10\x11rest")), keys: keys, release: release,
		onDetach: func() { close(detached) }}
	got := make(chan []byte, 1)
	go func() {
		b, _ := io.ReadAll(r)
		got <- b
	}()
	select {
	case <-detached:
	case <-time.After(5 * time.Second):
		t.Fatal("no detach")
	}
	close(release)
	if b := <-got; string(b) != "ab\x10c\x10" {
		t.Fatalf("passed on %q", b)
	}
	// Without the sequence, everything is passed on.
	r = &detachReader{src: bytes.NewReader([]byte("plain\x10")), keys: keys, release: release, onDetach: func() {}}
	if b, _ := io.ReadAll(r); string(b) != "plain\x10" {
		t.Fatalf("got %q", b)
	}
}
