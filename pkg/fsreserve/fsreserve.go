// Package fsreserve is the one check that keeps the engine's image writes
// (import and load; pull and build when they come) from taking the data
// root's filesystem below a reserve of free space, dockerd's
// --min-free-space: whatever one image holds, the host keeps room for its
// containers' writes, their logs and the engine's own state.
//
// The reserve is a percentage of the filesystem's size or a size. Free
// space is what statfs calls available (f_bavail, what df shows as Avail):
// the space any writer may use, not counting ext4's blocks reserved for
// root, which the root-run engine could otherwise eat into. A percentage
// reserves that share of inodes too, so that a tar of a million empty
// files stops as well.
//
// A writer checks before it starts and then every few megabytes
// (archive.ApplyOptions.Check): Check(path, next) fails when writing next
// more bytes could cross the reserve, so checks next bytes apart never do.
package fsreserve

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	units "github.com/docker/go-units"
	"golang.org/x/sys/unix"

	"github.com/sdengine/engine/pkg/errdefs"
)

// Default is dockerd's --min-free-space. Five percent is the share ext4
// keeps for root by default, the amount the ecosystem has long treated as
// what a system needs to keep working when users fill a disk; here it
// applies on every filesystem (xfs, btrfs and tmpfs keep none), and on top
// of ext4's own share, which the engine, running as root, would otherwise
// use up. On a 100 GB disk that is 5 GB: room for logs, container writes
// and the engine's records while someone reacts. A size can replace it
// where 5% is too much (a 4 TB disk) or too little.
const Default = "5%"

// Reserve is the free space image writes leave on a filesystem. The zero
// value reserves nothing.
type Reserve struct {
	Percent float64 // of the filesystem's size (and of its inodes)
	Bytes   int64   // used when Percent is 0
	text    string  // as the user gave it
}

// Parse reads a percentage ("5%", "0.5%") or a size ("2GB", "512m",
// "1048576"; units are binary, as in Docker's other size options). "0"
// or "0%" reserves nothing.
func Parse(s string) (Reserve, error) {
	v := strings.TrimSpace(s)
	if p, ok := strings.CutSuffix(v, "%"); ok {
		f, err := strconv.ParseFloat(strings.TrimSpace(p), 64)
		if err != nil || math.IsNaN(f) || f < 0 || f >= 100 {
			return Reserve{}, errdefs.InvalidParameter(fmt.Errorf("invalid min-free-space %q: a percentage must be at least 0 and below 100", s))
		}
		return Reserve{Percent: f, text: v}, nil
	}
	n, err := units.RAMInBytes(v)
	if err != nil || n < 0 {
		return Reserve{}, errdefs.InvalidParameter(fmt.Errorf("invalid min-free-space %q: want a percentage of the filesystem (5%%) or a size (2GB)", s))
	}
	return Reserve{Bytes: n, text: v}, nil
}

// String is the reserve as Parse reads it back.
func (r Reserve) String() string {
	if r.text != "" {
		return r.text
	}
	if r.Percent > 0 {
		return strconv.FormatFloat(r.Percent, 'f', -1, 64) + "%"
	}
	if r.Bytes == 0 {
		return "0"
	}
	return units.BytesSize(float64(r.Bytes))
}

// IsZero reports whether the reserve is off.
func (r Reserve) IsZero() bool { return r.Percent <= 0 && r.Bytes <= 0 }

// Space is what statfs tells of a filesystem.
type Space struct {
	Size, Avail      uint64 // bytes
	Inodes, FreeInod uint64
}

// Statfs reads path's filesystem; tests replace it.
var Statfs = func(path string) (Space, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(path, &st); err != nil {
		return Space{}, err
	}
	bs := uint64(st.Bsize)
	return Space{Size: st.Blocks * bs, Avail: st.Bavail * bs, Inodes: st.Files, FreeInod: st.Ffree}, nil
}

// Of returns the reserve in bytes on a filesystem of size bytes.
func (r Reserve) Of(size uint64) uint64 {
	if r.Percent > 0 {
		return uint64(math.Ceil(float64(size) * r.Percent / 100))
	}
	if r.Bytes > 0 {
		return uint64(r.Bytes)
	}
	return 0
}

// Check fails with an *Error (classified Unavailable) when writing next
// more bytes under path would leave less than the reserve free on its
// filesystem, or when the reserve's share of inodes is reached.
func (r Reserve) Check(path string, next int64) error {
	if r.IsZero() {
		return nil
	}
	sp, err := Statfs(path)
	if err != nil {
		return fmt.Errorf("check free space: %w", err)
	}
	keep := r.Of(sp.Size)
	if next < 0 {
		next = 0
	}
	if sp.Avail < keep || sp.Avail-keep < uint64(next) {
		return errdefs.Unavailable(&Error{Path: path, Reserve: r, Keep: keep, Space: sp})
	}
	if r.Percent > 0 && sp.Inodes > 0 {
		if keepInodes := uint64(math.Ceil(float64(sp.Inodes) * r.Percent / 100)); sp.FreeInod < keepInodes {
			return errdefs.Unavailable(&Error{Path: path, Reserve: r, Keep: keepInodes, Space: sp, Inodes: true})
		}
	}
	return nil
}

// Error says that a write stopped at the reserve.
type Error struct {
	Path    string // on the filesystem checked
	Reserve Reserve
	Keep    uint64 // the reserve, in bytes (or inodes)
	Space   Space
	Inodes  bool // the inodes ran short, not the bytes
}

func (e *Error) Error() string {
	if e.Inodes {
		return fmt.Sprintf("not enough free inodes: the filesystem of %s would drop below --min-free-space=%s (%d inodes free); %d of %d inodes are free",
			e.Path, e.Reserve, e.Keep, e.Space.FreeInod, e.Space.Inodes)
	}
	return fmt.Sprintf("not enough free space: the filesystem of %s would drop below --min-free-space=%s (%s free); %s free of %s",
		e.Path, e.Reserve, units.BytesSize(float64(e.Keep)), units.BytesSize(float64(e.Space.Avail)), units.BytesSize(float64(e.Space.Size)))
}

// IsError reports whether err is (or wraps) an *Error.
func IsError(err error) bool {
	var e *Error
	return errors.As(err, &e)
}
