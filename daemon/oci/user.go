package oci

import (
	"errors"
	"fmt"
	"io"
	"os"

	securejoin "github.com/cyphar/filepath-securejoin"
	"github.com/moby/sys/user"
	"golang.org/x/sys/unix"

	"github.com/sdengine/engine/pkg/errdefs"
)

// ResolveUser turns a --user value ("", "name", "uid", "name:group",
// "uid:gid", ...) into ids using the container's own /etc/passwd and
// /etc/group. The files are looked up inside rootfs with symlinks resolved
// as if rootfs were "/", so an image cannot make us read host files.
// Numeric ids need no entry in the files.
func ResolveUser(rootfs, userSpec string) (uid, gid uint32, additionalGids []uint32, err error) {
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
		if errors.Is(err, user.ErrNoPasswdEntries) || errors.Is(err, user.ErrNoGroupEntries) || errors.Is(err, user.ErrRange) {
			return 0, 0, nil, errdefs.InvalidParameter(err)
		}
		return 0, 0, nil, errdefs.InvalidParameter(fmt.Errorf("resolving user %q: %w", userSpec, err))
	}
	for _, g := range eu.Sgids {
		additionalGids = append(additionalGids, uint32(g))
	}
	return uint32(eu.Uid), uint32(eu.Gid), additionalGids, nil
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
