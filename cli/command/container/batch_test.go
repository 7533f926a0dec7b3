package container

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sdengine/engine/cli/command"
)

// The calls overlap (a batch of slow stops costs one stop, not their sum),
// never more than the limit at once, and the output keeps the arguments'
// order even when later ones finish first.
func TestRunOrderedParallelBoundedInOrder(t *testing.T) {
	const n, limit = 12, 4
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("c%d", i)
	}
	var running, peak, finished, emitted atomic.Int32
	releaseFirst, releaseOthers := make(chan struct{}), make(chan struct{})
	op := func(ctx context.Context, name string) (string, error) {
		now := running.Add(1)
		defer running.Add(-1)
		for {
			p := peak.Load()
			if now <= p || peak.CompareAndSwap(p, now) {
				break
			}
		}
		if name == "c0" {
			// The first finishes last: nothing may be printed before it.
			<-releaseFirst
		} else {
			<-releaseOthers
			finished.Add(1)
		}
		return name, nil
	}
	var got []string
	done := make(chan []error)
	go func() {
		done <- runOrdered(context.Background(), names, limit, op, func(s string) {
			emitted.Add(1)
			got = append(got, s)
		})
	}()
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for !cond() {
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting for %s", what)
			}
			time.Sleep(time.Millisecond)
		}
	}
	waitFor("the calls to overlap", func() bool { return running.Load() == limit })
	time.Sleep(20 * time.Millisecond)
	if p := peak.Load(); p != limit {
		t.Errorf("peak concurrency %d, want %d", p, limit)
	}
	// Every other call completes while c0 holds its slot.
	close(releaseOthers)
	waitFor("the others to finish", func() bool { return finished.Load() == n-1 })
	if e := emitted.Load(); e != 0 {
		t.Errorf("%d results printed before the first argument's", e)
	}
	close(releaseFirst)
	errs := <-done
	if len(errs) != 0 {
		t.Fatalf("errors: %v", errs)
	}
	if p := peak.Load(); p != limit {
		t.Errorf("peak concurrency %d, want %d", p, limit)
	}
	if fmt.Sprint(got) != fmt.Sprint(names) {
		t.Errorf("output %v, want %v", got, names)
	}
}

// A failure is reported without hiding the others' results, and the
// command's status is 1.
func TestForEachErrorsAfterResults(t *testing.T) {
	names := []string{"a", "bad", "b", "worse"}
	op := func(ctx context.Context, name string) (string, error) {
		if name == "bad" || name == "worse" {
			return "", fmt.Errorf("No such container: %s", name)
		}
		return name, nil
	}
	var out []string
	errs := runOrdered(context.Background(), names, maxParallel, op, func(s string) { out = append(out, s) })
	if fmt.Sprint(out) != "[a b]" {
		t.Errorf("output %v", out)
	}
	var stderr bytes.Buffer
	err := reportErrors(&stderr, errs)
	var se command.StatusError
	if !errors.As(err, &se) || se.StatusCode != 1 {
		t.Errorf("status %v, want exit status 1", err)
	}
	if want := "No such container: bad\nNo such container: worse\n"; stderr.String() != want {
		t.Errorf("stderr %q, want %q", stderr.String(), want)
	}
	if err := reportErrors(&stderr, nil); err != nil {
		t.Errorf("no errors gave %v", err)
	}
}

// docker rm -f says that a container is not there but does not fail.
func TestReportErrorsNotFailure(t *testing.T) {
	var stderr bytes.Buffer
	err := reportErrors(&stderr, []error{notFailure{errors.New("No such container: x")}})
	if err != nil {
		t.Errorf("a not-failure gave status %v", err)
	}
	if stderr.String() != "No such container: x\n" {
		t.Errorf("stderr %q", stderr.String())
	}
	err = reportErrors(&stderr, []error{notFailure{errors.New("gone")}, errors.New("refused")})
	var se command.StatusError
	if !errors.As(err, &se) || se.StatusCode != 1 {
		t.Errorf("a failure beside a not-failure gave %v, want exit status 1", err)
	}
}
