package oci

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sdengine/engine/pkg/errdefs"
)

// --group-add: names from the image's /etc/group, numbers as they are,
// after the primary group and the user's own groups, each once.
func TestResolveUserGroupAdd(t *testing.T) {
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "etc"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "etc/passwd"), []byte("root:x:0:0::/root:/bin/sh\nweb:x:33:33::/var/www:/bin/sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	group := "root:x:0:\nwheel:x:10:\naudio:x:29:web\nwww-data:x:33:\nstaff:x:50:\n"
	if err := os.WriteFile(filepath.Join(root, "etc/group"), []byte(group), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		spec   string
		add    []string
		groups []uint32
	}{
		// Docker's TestExecWithGroupAdd: the explicit group drops the
		// user's own groups, the added ones come sorted.
		{"root:root", []string{"staff", "wheel", "audio", "777"}, []uint32{0, 10, 29, 50, 777}},
		{"web", []string{"audio", "wheel"}, []uint32{33, 29, 10}},
		{"web", []string{"www-data"}, []uint32{33, 29}},
		{"1234:5678", []string{"50"}, []uint32{5678, 50}},
	}
	for _, c := range cases {
		_, _, groups, err := ResolveUser(root, c.spec, c.add)
		if err != nil || !slices.Equal(groups, c.groups) {
			t.Errorf("%q %q: %v %v, want %v", c.spec, c.add, groups, err, c.groups)
		}
	}
	_, _, _, err := ResolveUser(root, "root", []string{"no-such-group"})
	if !errdefs.IsInvalidParameter(err) || !strings.Contains(err.Error(), "Unable to find group no-such-group") {
		t.Errorf("unknown group added: %v", err)
	}
	// Without /etc/group only numbers can be added.
	empty := t.TempDir()
	if _, _, groups, err := ResolveUser(empty, "5:6", []string{"7"}); err != nil || !slices.Equal(groups, []uint32{6, 7}) {
		t.Errorf("no group file: %v %v", groups, err)
	}
	if _, _, _, err := ResolveUser(empty, "5:6", []string{"staff"}); !errdefs.IsInvalidParameter(err) {
		t.Errorf("name without a group file: %v", err)
	}
}

// Without the image's groups (Kubernetes' Strict policy) the user keeps
// its primary group and what was added, not its /etc/group memberships.
func TestResolveUserGroupsStrict(t *testing.T) {
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "etc"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "etc/passwd"), []byte("u:x:1000:1000::/home/u:/bin/sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "etc/group"), []byte("u:x:1000:\nimg:x:50000:u\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		imageGroups bool
		groups      []uint32
	}{
		{true, []uint32{1000, 50000, 1234}},
		{false, []uint32{1000, 1234}},
	}
	for _, c := range cases {
		uid, gid, groups, err := ResolveUserGroups(root, "1000", []string{"1234"}, c.imageGroups)
		if err != nil || uid != 1000 || gid != 1000 || !slices.Equal(groups, c.groups) {
			t.Errorf("image groups %v: %d %d %v %v, want 1000 1000 %v", c.imageGroups, uid, gid, groups, err, c.groups)
		}
	}
}
