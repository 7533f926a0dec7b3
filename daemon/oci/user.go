package oci

import (
	"errors"
	"fmt"
	"io"
	"os"
	"slices"

	securejoin "github.com/cyphar/filepath-securejoin"
	"github.com/moby/sys/user"
	"golang.org/x/sys/unix"

	"github.com/sdengine/engine/pkg/errdefs"
)

// ResolveUser turns a --user value ("", "name", "uid", "name:group",
// "uid:gid", ...) and the container's --group-add values into ids using the
// container's own /etc/passwd and /etc/group. The files are looked up
// inside rootfs with symlinks resolved as if rootfs were "/", so an image
// cannot make us read host files. Numeric ids need no entry in the files.
//
// The supplementary groups are, as in Docker, the primary group first, then
// the user's groups in /etc/group (only when the spec names no group), then
// groupAdd; each once. The primary group is among them so that a process's
// groups are what `id` and `ls -l` expect of the user, whatever the runtime.
func ResolveUser(rootfs, userSpec string, groupAdd []string) (uid, gid uint32, additionalGids []uint32, err error) {
	return ResolveUserGroups(rootfs, userSpec, groupAdd, true)
}

// ResolveUserGroups is ResolveUser; without imageGroups the user's groups in
// the image's /etc/group are left out, so the process has its primary group
// and groupAdd only (Kubernetes' SupplementalGroupsPolicy Strict: an image
// cannot grant its user groups the pod did not ask for).
func ResolveUserGroups(rootfs, userSpec string, groupAdd []string, imageGroups bool) (uid, gid uint32, additionalGids []uint32, err error) {
	passwd, err := openInRoot(rootfs, "/etc/passwd")
	if err != nil {
		return 0, 0, nil, err
	}
	if passwd != nil {
		defer passwd.Close()
	}
	group, err := openInRoot(rootfs, "/etc/group")
	if err != nil {
		return 0, 0, nil, err
	}
	if group != nil {
		defer group.Close()
	}
	// A nil *os.File in an io.Reader interface is not nil; pass real nils.
	var pr, gr io.Reader
	if passwd != nil {
		pr = passwd
	}
	if group != nil {
		gr = group
	}
	eu, err := user.GetExecUser(userSpec, nil, pr, gr)
	if err != nil {
		return 0, 0, nil, userError(fmt.Sprintf("resolving user %q", userSpec), err)
	}
	gids := []int{eu.Gid}
	if imageGroups {
		gids = append(gids, eu.Sgids...)
	}
	if len(groupAdd) > 0 {
		// The group file is read again from its start.
		gr = nil
		if group != nil {
			if _, err := group.Seek(0, io.SeekStart); err != nil {
				return 0, 0, nil, fmt.Errorf("reading container's /etc/group: %w", err)
			}
			gr = group
		}
		added, err := user.GetAdditionalGroups(groupAdd, gr)
		if err != nil {
			return 0, 0, nil, userError(fmt.Sprintf("resolving --group-add %q", groupAdd), err)
		}
		// The library returns them in map order; sorted, the spec is the
		// same from one start to the next.
		slices.Sort(added)
		gids = append(gids, added...)
	}
	for _, g := range gids {
		if !slices.Contains(additionalGids, uint32(g)) {
			additionalGids = append(additionalGids, uint32(g))
		}
	}
	return uint32(eu.Uid), uint32(eu.Gid), additionalGids, nil
}

// userError classifies a failure to resolve a user or a group: the user's
// input does not fit the image. The library's own messages are Docker's
// ("unable to find user x: no matching entries in passwd file") and are
// kept as they are; anything else gets what was being resolved.
func userError(what string, err error) error {
	if errors.Is(err, user.ErrNoPasswdEntries) || errors.Is(err, user.ErrNoGroupEntries) || errors.Is(err, user.ErrRange) {
		return errdefs.InvalidParameter(err)
	}
	return errdefs.InvalidParameter(fmt.Errorf("%s: %w", what, err))
}

// openInRoot opens name inside rootfs; a missing file is (nil, nil).
func openInRoot(rootfs, name string) (*os.File, error) {
	p, err := securejoin.SecureJoin(rootfs, name)
	if err != nil {
		return nil, fmt.Errorf("resolving %s in container: %w", name, err)
	}
	f, err := os.OpenFile(p, os.O_RDONLY|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, nil
		}
		return nil, fmt.Errorf("opening container's %s: %w", name, err)
	}
	st, err := f.Stat()
	if err != nil || !st.Mode().IsRegular() {
		f.Close()
		// A directory or a fifo at /etc/passwd is treated as absent
		// (opened non-blocking so that a fifo cannot hang us).
		return nil, nil
	}
	return f, nil
}
