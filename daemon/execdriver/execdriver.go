// Package execdriver is what the daemon knows of the component that runs
// containers: the values it hands over and gets back. The daemon never sees
// how a container is run; the one implementation, daemon/execdriver/native
// (libcontainer under a per-container shim), is chosen by daemon.New.
package execdriver
