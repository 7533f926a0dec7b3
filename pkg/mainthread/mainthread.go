// Package mainthread, imported for its side effect, keeps a program's main
// goroutine on the main thread for the program's whole life.
//
// Code that moves a thread into another namespace (setns) locks its
// goroutine to the thread and never unlocks it, so that Go ends the thread
// with the goroutine rather than run other goroutines in that namespace.
// Go does end such a thread, except the main one: that one it parks for
// good, still in the namespace, which it then keeps alive (a pod's network
// namespace outliving the pod). With the main goroutine locked to the main
// thread no other goroutine ever runs there, so every thread a goroutine
// leaves in a namespace does end. Every package with such code imports
// this one, so the guarantee holds in any program (and test) using it.
package mainthread

import "runtime"

// init runs on the main thread, as every init does; LockOSThread there
// makes main run, and stay, on it.
func init() { runtime.LockOSThread() }
