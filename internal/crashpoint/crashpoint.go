// Package crashpoint lets the fault-injection tests stop the daemon at a
// named point of a multi-step operation, so that they can kill -9 it there
// and check what a restart makes of the half-done work.
//
// A point is armed by the environment: SDENGINE_CRASHPOINT=<name> (several
// names separated by commas) and SDENGINE_CRASHPOINT_DIR=<dir>. When the
// daemon reaches an armed point it creates <dir>/<name> (so the test knows
// it is there) and blocks forever. Unarmed, Hit costs one map lookup: the
// environment is read once.
package crashpoint

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
)

var (
	once  sync.Once
	armed map[string]bool
	dir   string
)

func load() {
	armed = map[string]bool{}
	for _, n := range strings.Split(os.Getenv("SDENGINE_CRASHPOINT"), ",") {
		if n = strings.TrimSpace(n); n != "" {
			armed[n] = true
		}
	}
	dir = os.Getenv("SDENGINE_CRASHPOINT_DIR")
}

// Hit blocks forever if the point name is armed, after saying so in the
// crash-point directory; otherwise it returns at once.
func Hit(name string) {
	once.Do(load)
	if !armed[name] {
		return
	}
	if dir != "" {
		if f, err := os.Create(filepath.Join(dir, name)); err == nil {
			f.Close()
		}
	}
	select {}
}
