package command

import (
	"os"
	"strconv"
	"strings"
	"testing"
)

func TestNoteInheritedListen(t *testing.T) {
	t.Setenv("LISTEN_PID", strconv.Itoa(os.Getpid()))
	t.Setenv("LISTEN_FDS", "2")
	t.Setenv("LISTEN_FDNAMES", "a:b")
	NoteInherited()
	if Inherited.Listen != 2 || strings.Join(Inherited.Names, ":") != "a:b" {
		t.Errorf("noted %+v", Inherited)
	}
	for _, k := range []string{"LISTEN_PID", "LISTEN_FDS", "LISTEN_FDNAMES"} {
		if _, ok := os.LookupEnv(k); ok {
			t.Errorf("%s left in the environment", k)
		}
	}
	// Another process's socket activation is not ours.
	t.Setenv("LISTEN_PID", "1")
	t.Setenv("LISTEN_FDS", "2")
	NoteInherited()
	if Inherited.Listen != 0 {
		t.Errorf("LISTEN_PID of another process taken: %+v", Inherited)
	}
}

func TestPassPlan(t *testing.T) {
	saved := Inherited
	defer func() { Inherited = saved }()
	Inherited.Open, Inherited.Listen, Inherited.Names = 3, 2, []string{"a", "b"}
	r, err := PassPlan(0)
	if err != nil || r.Files != 2 || r.Listen != 2 {
		t.Errorf("socket activation alone: %+v %v", r, err)
	}
	if r, err = PassPlan(3); err != nil || r.Files != 3 || r.Listen != 2 {
		t.Errorf("with --preserve-fds 3: %+v %v", r, err)
	}
	if _, err = PassPlan(4); err == nil || !strings.Contains(err.Error(), "--preserve-fds 4: only 3 descriptors") {
		t.Errorf("--preserve-fds beyond what is held: %v", err)
	}
	Inherited.Open = 1
	if _, err = PassPlan(0); err == nil || !strings.Contains(err.Error(), "LISTEN_FDS=2") {
		t.Errorf("LISTEN_FDS beyond what is held: %v", err)
	}
	Inherited.Listen, Inherited.Names = 0, nil
	if r, err = PassPlan(0); err != nil || r.Files != 0 {
		t.Errorf("nothing to pass: %+v %v", r, err)
	}
}
