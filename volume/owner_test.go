package volume

import (
	"os"
	"syscall"
	"testing"
)

func owner(t *testing.T, p string) (uint32, uint32) {
	t.Helper()
	fi, err := os.Lstat(p)
	if err != nil {
		t.Fatal(err)
	}
	st := fi.Sys().(*syscall.Stat_t)
	return st.Uid, st.Gid
}
