// Package overlay2 is an overlayfs graph driver.
//
// Layout under root:
//
//	l/<short>        symlink to ../<id>/diff; keeps mount options short
//	<id>/diff        the layer's own changes (upperdir for RW layers)
//	<id>/link        the layer's short name
//	<id>/lower       "l/<parent>:l/<grandparent>:..." (absent for base layers)
//	<id>/work        overlayfs workdir; only RW layers have one
//	<id>/merged      mount point
package overlay2

import (
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/moby/sys/mountinfo"
	"golang.org/x/sys/unix"

	"github.com/sdengine/engine/pkg/archive"
	"github.com/sdengine/engine/pkg/atomicfile"
	"github.com/sdengine/engine/pkg/errdefs"
)

const linkDir = "l"

var validID = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]*$`)

// Driver is the overlay2 driver rooted at a directory.
type Driver struct {
	root string
}

// New opens (creating if needed) an overlay2 store at root. Short links
// whose layer is gone (left by a crash in an older version's create or
// remove) are removed.
func New(root string) (*Driver, error) {
	if err := os.MkdirAll(filepath.Join(root, linkDir), 0o711); err != nil {
		return nil, fmt.Errorf("overlay2: %w", err)
	}
	d := &Driver{root: root}
	d.removeDanglingLinks()
	return d, nil
}

func (d *Driver) removeDanglingLinks() {
	ents, err := os.ReadDir(filepath.Join(d.root, linkDir))
	if err != nil {
		slog.Warn("overlay2: cannot list short links", "err", err)
		return
	}
	for _, e := range ents {
		p := filepath.Join(d.root, linkDir, e.Name())
		if _, err := os.Stat(p); errors.Is(err, os.ErrNotExist) {
			slog.Info("overlay2: removing a short link whose layer is gone", "link", e.Name())
			os.Remove(p)
		}
	}
}

// Name implements graphdriver.Driver.
func (d *Driver) Name() string { return "overlay2" }

// Whiteouts implements graphdriver.Driver: layers hold overlayfs whiteouts.
func (d *Driver) Whiteouts() archive.WhiteoutMode { return archive.WhiteoutOverlay }

func (d *Driver) dir(id string) string { return filepath.Join(d.root, id) }

// Diff implements graphdriver.Driver.
func (d *Driver) Diff(id string) string { return filepath.Join(d.dir(id), "diff") }

func checkID(id string) error {
	if !validID.MatchString(id) || id == linkDir {
		return errdefs.InvalidParameter(fmt.Errorf("overlay2: invalid layer id %q", id))
	}
	return nil
}

// Create implements graphdriver.Driver.
func (d *Driver) Create(id, parent string) error { return d.create(id, parent, false) }

// CreateRW implements graphdriver.Driver.
func (d *Driver) CreateRW(id, parent string) error { return d.create(id, parent, true) }

func (d *Driver) create(id, parent string, rw bool) (retErr error) {
	if err := checkID(id); err != nil {
		return err
	}
	if parent != "" {
		if err := checkID(parent); err != nil {
			return err
		}
	}
	dir := d.dir(id)
	if err := os.Mkdir(dir, 0o710); err != nil {
		if errors.Is(err, os.ErrExist) {
			return errdefs.Conflict(fmt.Errorf("overlay2: layer %s already exists", id))
		}
		return fmt.Errorf("overlay2: %w", err)
	}
	defer func() {
		if retErr != nil {
			d.Remove(id)
		}
	}()
	subdirs := []string{"diff", "merged"}
	if rw {
		subdirs = append(subdirs, "work")
	}
	for _, s := range subdirs {
		if err := os.Mkdir(filepath.Join(dir, s), 0o755); err != nil {
			return fmt.Errorf("overlay2: %w", err)
		}
	}
	short, err := newShortName()
	if err != nil {
		return err
	}
	// The layer's link file names its short link before the link exists,
	// so that Remove finds the link of a layer whose creation a crash cut
	// short.
	if err := atomicfile.Write(filepath.Join(dir, "link"), []byte(short), 0o644); err != nil {
		return err
	}
	if err := os.Symlink(filepath.Join("..", id, "diff"), filepath.Join(d.root, linkDir, short)); err != nil {
		return fmt.Errorf("overlay2: %w", err)
	}
	if parent == "" {
		return nil
	}
	plink, err := os.ReadFile(filepath.Join(d.dir(parent), "link"))
	if err != nil {
		return errdefs.NotFound(fmt.Errorf("overlay2: parent layer %s: %w", parent, err))
	}
	lower := linkDir + "/" + string(plink)
	if plower, err := os.ReadFile(filepath.Join(d.dir(parent), "lower")); err == nil {
		lower += ":" + string(plower)
	} else if !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("overlay2: %w", err)
	}
	return atomicfile.Write(filepath.Join(dir, "lower"), []byte(lower), 0o644)
}

// newShortName returns 26 random characters; 128 layers of "l/<name>:"
// stay well under the one-page limit of mount options.
func newShortName() (string, error) {
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"
	b := make([]byte, 26)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("overlay2: %w", err)
	}
	for i := range b {
		b[i] = alphabet[int(b[i])%len(alphabet)]
	}
	return string(b), nil
}

// lowers lists the parent chain as paths relative to root, nearest first.
func (d *Driver) lowers(id string) ([]string, error) {
	data, err := os.ReadFile(filepath.Join(d.dir(id), "lower"))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("overlay2: %w", err)
	}
	return strings.Split(strings.TrimSpace(string(data)), ":"), nil
}

func (d *Driver) isRW(id string) bool {
	_, err := os.Stat(filepath.Join(d.dir(id), "work"))
	return err == nil
}

// Remove implements graphdriver.Driver.
func (d *Driver) Remove(id string) error {
	if err := checkID(id); err != nil {
		return err
	}
	if err := d.Unmount(id); err != nil {
		return err
	}
	if link, err := os.ReadFile(filepath.Join(d.dir(id), "link")); err == nil && validID.MatchString(string(link)) {
		os.Remove(filepath.Join(d.root, linkDir, string(link)))
	}
	if err := os.RemoveAll(d.dir(id)); err != nil {
		return fmt.Errorf("overlay2: remove %s: %w", id, err)
	}
	return nil
}

// List implements graphdriver.Driver: every layer directory, whole or not.
func (d *Driver) List() ([]string, error) {
	ents, err := os.ReadDir(d.root)
	if err != nil {
		return nil, fmt.Errorf("overlay2: %w", err)
	}
	var ids []string
	for _, e := range ents {
		if e.Name() != linkDir {
			ids = append(ids, e.Name())
		}
	}
	return ids, nil
}

// Metadata describes the layer's directories as docker inspect shows them.
func (d *Driver) Metadata(id string) (map[string]string, error) {
	if err := checkID(id); err != nil {
		return nil, err
	}
	low, err := d.lowers(id)
	if err != nil {
		return nil, err
	}
	var abs []string
	for _, l := range low {
		p, err := filepath.EvalSymlinks(filepath.Join(d.root, l))
		if err != nil {
			p = filepath.Join(d.root, l)
		}
		abs = append(abs, p)
	}
	m := map[string]string{
		"UpperDir":  d.Diff(id),
		"WorkDir":   filepath.Join(d.dir(id), "work"),
		"MergedDir": filepath.Join(d.dir(id), "merged"),
	}
	if len(abs) > 0 {
		m["LowerDir"] = strings.Join(abs, ":")
	}
	return m, nil
}

// Cleanup implements graphdriver.Driver: it unmounts every merged dir.
func (d *Driver) Cleanup() error {
	mounts, err := mountinfo.GetMounts(mountinfo.PrefixFilter(d.root))
	if err != nil {
		return fmt.Errorf("overlay2: %w", err)
	}
	var errs []error
	for i := len(mounts) - 1; i >= 0; i-- {
		if err := unmount(mounts[i].Mountpoint); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func unmount(target string) error {
	err := unix.Unmount(target, 0)
	if errors.Is(err, unix.EBUSY) {
		// Something (a process cwd, a lingering namespace) still pins it;
		// detach so the directory can go away once they let go.
		err = unix.Unmount(target, unix.MNT_DETACH)
	}
	if err != nil && !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ENOENT) {
		return fmt.Errorf("overlay2: unmount %s: %w", target, err)
	}
	return nil
}
