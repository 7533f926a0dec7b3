package mainthread

import (
	"runtime"
	"sync"
	"testing"

	"golang.org/x/sys/unix"
)

// No goroutine but main runs on the main thread (whose thread ID is the
// process ID): 200 goroutines, each locked to its thread as the namespace
// code does, and the test's own, never see it.
func TestNoGoroutineOnTheMainThread(t *testing.T) {
	pid := unix.Getpid()
	var wg sync.WaitGroup
	var mu sync.Mutex
	onMain := 0
	for range 200 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			runtime.LockOSThread()
			if unix.Gettid() == pid {
				mu.Lock()
				onMain++
				mu.Unlock()
			}
			// Exits locked: Go ends this thread.
		}()
	}
	wg.Wait()
	if unix.Gettid() == pid {
		onMain++
	}
	if onMain != 0 {
		t.Errorf("%d goroutines ran on the main thread", onMain)
	}
}
