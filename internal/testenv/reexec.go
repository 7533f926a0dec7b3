package testenv

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
)

// Reexec runs this test binary again under unshare(1) with unshareFlags
// (a namespace of the tests' own: "-n", "--mount --propagation private"),
// with envVar=1 set so the copy knows it is the one inside, and exits with
// the copy's status. It does not return. A TestMain calls it when envVar is
// not yet set.
func Reexec(envVar string, unshareFlags ...string) {
	args := append(append(append([]string{}, unshareFlags...), os.Args[0]), os.Args[1:]...)
	cmd := exec.Command("unshare", args...)
	cmd.Env = append(os.Environ(), envVar+"=1")
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	err := cmd.Run()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		os.Exit(ee.ExitCode())
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "re-exec under unshare %v: %v\n", unshareFlags, err)
		os.Exit(1)
	}
	os.Exit(0)
}
