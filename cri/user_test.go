package cri

import (
	"os"
	"slices"
	"testing"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// The supplemental groups policy reaches the engine as the pod's
// StrictGroups; Merge (and no policy) is the engine's default.
func TestCreateParamsSupplementalGroupsPolicy(t *testing.T) {
	for _, c := range []struct {
		policy runtimeapi.SupplementalGroupsPolicy
		strict bool
	}{
		{runtimeapi.SupplementalGroupsPolicy_Merge, false},
		{runtimeapi.SupplementalGroupsPolicy_Strict, true},
	} {
		sec := &runtimeapi.LinuxContainerSecurityContext{
			RunAsUser:                &runtimeapi.Int64Value{Value: 1000},
			SupplementalGroups:       []int64{1234},
			SupplementalGroupsPolicy: c.policy,
		}
		p, err := createParams(testSandbox(), testContainer(sec), "sha256:img")
		if err != nil {
			t.Fatal(err)
		}
		if p.Pod.StrictGroups != c.strict || !slices.Equal(p.HostConfig.GroupAdd, []string{"1234"}) || p.Config.User != "1000" {
			t.Errorf("%v: strict %v, group-add %q, user %q", c.policy, p.Pod.StrictGroups, p.HostConfig.GroupAdd, p.Config.User)
		}
	}
}

func TestParseProcUser(t *testing.T) {
	status := "Name:\tsh\nUmask:\t0022\nState:\tS (sleeping)\nUid:\t1000\t1001\t1002\t1003\nGid:\t2000\t2000\t2000\t2000\nFDSize:\t64\nGroups:\t2000 1234 50000 \nNStgid:\t1\n"
	u, err := parseProcUser([]byte(status))
	if err != nil {
		t.Fatal(err)
	}
	l := u.GetLinux()
	if l.Uid != 1000 || l.Gid != 2000 || !slices.Equal(l.SupplementalGroups, []int64{2000, 1234, 50000}) {
		t.Errorf("got %+v", l)
	}
	// No supplementary groups at all is an empty Groups line.
	u, err = parseProcUser([]byte("Uid:\t0\t0\t0\t0\nGid:\t0\t0\t0\t0\nGroups:\t\n"))
	if err != nil || u.Linux.Uid != 0 || len(u.Linux.SupplementalGroups) != 0 {
		t.Errorf("root without groups: %+v %v", u, err)
	}
	if _, err := parseProcUser([]byte("Name:\tx\n")); err == nil {
		t.Error("status without ids: no error")
	}
}

// processUser reads a real process: this test's own.
func TestProcessUser(t *testing.T) {
	u, err := processUser(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if u.Linux.Uid != int64(os.Getuid()) || u.Linux.Gid != int64(os.Getgid()) {
		t.Errorf("got %+v, want uid %d gid %d", u.Linux, os.Getuid(), os.Getgid())
	}
}
