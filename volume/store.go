// Package volume keeps the engine's named and anonymous volumes: one
// directory per volume under <data-root>/volumes, its record beside its
// data, and the containers that reference it. The daemon holds a *Store;
// how a volume's data is provided is the Driver's business (local.go).
package volume

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/docker/docker/api/types/filters"
	volumetypes "github.com/docker/docker/api/types/volume"

	"github.com/sdengine/engine/pkg/atomicfile"
	"github.com/sdengine/engine/pkg/errdefs"
)

// AnonymousLabel marks a volume made without a name (by `-v /path`, an
// image's VOLUME, or POST /volumes/create without a name), as Docker does;
// prune removes only those by default.
const AnonymousLabel = "com.docker.volume.anonymous"

// DefaultDriver is the only driver: Docker's "local".
const DefaultDriver = "local"

// recordFile is a volume's record, in its directory beside _data.
const recordFile = "volume.json"

// Driver provides a volume's data. Mount is called when the first
// container using the volume starts and Unmount when the last one stops;
// both must be repeatable with the same result.
type Driver interface {
	Name() string
	// Validate checks the options given at create time.
	Validate(opts map[string]string) error
	// Mount makes the volume's data available at path.
	Mount(path string, opts map[string]string) error
	// Unmount undoes Mount.
	Unmount(path string, opts map[string]string) error
}

// Volume is one volume's record.
type Volume struct {
	Name      string
	Driver    string
	CreatedAt time.Time
	Labels    map[string]string `json:",omitempty"`
	Options   map[string]string `json:",omitempty"`
}

// Anonymous reports whether the volume was made without a name.
func (v *Volume) Anonymous() bool {
	_, ok := v.Labels[AnonymousLabel]
	return ok
}

type entry struct {
	Volume
	refs   map[string]struct{} // containers that reference the volume
	mounts map[string]struct{} // containers that have it mounted (running)
}

// Store is the set of volumes.
type Store struct {
	root   string
	driver Driver
	mu     sync.Mutex
	vols   map[string]*entry
}

// validName is Docker's rule for a local volume's name.
var validName = regexp.MustCompile(`^[a-zA-Z0-9][a-zA-Z0-9_.-]+$`)

// New opens the store at root (<data-root>/volumes). A volume whose record
// cannot be read is logged and left alone, never costing the others.
func New(root string) (*Store, error) {
	if err := os.MkdirAll(root, 0o701); err != nil {
		return nil, fmt.Errorf("create volumes directory: %w", err)
	}
	s := &Store{root: root, driver: Local{}, vols: map[string]*entry{}}
	des, err := os.ReadDir(root)
	if err != nil {
		return nil, fmt.Errorf("read volumes directory: %w", err)
	}
	for _, de := range des {
		if !de.IsDir() {
			continue
		}
		b, err := os.ReadFile(filepath.Join(root, de.Name(), recordFile))
		if err != nil {
			if errors.Is(err, os.ErrNotExist) {
				// A create cut short before its record: nothing uses it.
				slog.Info("volumes: removing a volume directory without a record", "name", de.Name())
				_ = os.RemoveAll(filepath.Join(root, de.Name()))
			} else {
				slog.Error("volumes: skipping unreadable volume", "name", de.Name(), "err", err)
			}
			continue
		}
		var v Volume
		if err := json.Unmarshal(b, &v); err != nil || v.Name != de.Name() {
			slog.Error("volumes: skipping corrupt volume record", "name", de.Name(), "err", err)
			continue
		}
		s.vols[v.Name] = &entry{Volume: v, refs: map[string]struct{}{}, mounts: map[string]struct{}{}}
	}
	return s, nil
}

// Root is the directory the volumes live in.
func (s *Store) Root() string { return s.root }

// Path is the volume's data directory, its Mountpoint.
func (s *Store) Path(name string) string { return filepath.Join(s.root, name, "_data") }

// ValidateName refuses a name the local driver cannot take, with Docker's
// messages.
func ValidateName(name string) error {
	if len(name) == 1 {
		return errdefs.InvalidParameter(fmt.Errorf("volume name is too short, names should be at least two alphanumeric characters"))
	}
	if !validName.MatchString(name) {
		return errdefs.InvalidParameter(fmt.Errorf("%q includes invalid characters for a local volume name, only %q are allowed. If you intended to pass a host directory, use absolute path", name, "[a-zA-Z0-9][a-zA-Z0-9_.-]"))
	}
	return nil
}

// Create makes a volume, or returns the one of that name if it exists (as
// Docker does: create is idempotent; a different driver is a conflict).
// An empty name makes an anonymous volume with a random name.
func (s *Store) Create(name, driver string, opts, labels map[string]string) (Volume, error) {
	if driver == "" {
		driver = DefaultDriver
	}
	if name == "" {
		name = randomName()
		labels = maps.Clone(labels)
		if labels == nil {
			labels = map[string]string{}
		}
		labels[AnonymousLabel] = ""
	}
	if err := ValidateName(name); err != nil {
		return Volume{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if e, ok := s.vols[name]; ok {
		if driver != e.Driver {
			return Volume{}, errdefs.Conflict(fmt.Errorf("create %s: volume name must be unique", name))
		}
		return e.copy(), nil
	}
	if driver != DefaultDriver {
		return Volume{}, errdefs.NotFound(fmt.Errorf("create %s: error looking up volume plugin %s: plugin %q not found", name, driver, driver))
	}
	if err := s.driver.Validate(opts); err != nil {
		return Volume{}, errdefs.InvalidParameter(fmt.Errorf("create %s: %w", name, err))
	}
	v := Volume{Name: name, Driver: driver, CreatedAt: time.Now().UTC().Truncate(time.Second), Labels: labels, Options: opts}
	dir := filepath.Join(s.root, name)
	if err := os.MkdirAll(filepath.Join(dir, "_data"), 0o755); err != nil {
		return Volume{}, fmt.Errorf("create %s: %w", name, err)
	}
	b, err := json.Marshal(v)
	if err != nil {
		return Volume{}, err
	}
	// The record last: a directory without one is a create that did not
	// finish, removed by the next New.
	if err := atomicfile.Write(filepath.Join(dir, recordFile), b, 0o600); err != nil {
		_ = os.RemoveAll(dir)
		return Volume{}, fmt.Errorf("create %s: %w", name, err)
	}
	s.vols[name] = &entry{Volume: v, refs: map[string]struct{}{}, mounts: map[string]struct{}{}}
	return v.clone(), nil
}

func (v Volume) clone() Volume {
	v.Labels = maps.Clone(v.Labels)
	v.Options = maps.Clone(v.Options)
	return v
}

func (e *entry) copy() Volume { return e.Volume.clone() }

func notFound(name string) error {
	return errdefs.NotFound(fmt.Errorf("get %s: no such volume", name))
}

// Get returns the volume called name.
func (s *Store) Get(name string) (Volume, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.vols[name]
	if !ok {
		return Volume{}, notFound(name)
	}
	return e.copy(), nil
}

// Refs lists the containers that reference the volume.
func (s *Store) Refs(name string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if e, ok := s.vols[name]; ok {
		return sortedKeys(e.refs)
	}
	return nil
}

func sortedKeys(m map[string]struct{}) []string {
	out := slices.Collect(maps.Keys(m))
	sort.Strings(out)
	return out
}

// Reference records that container ref uses the volume: it cannot be
// removed until Release.
func (s *Store) Reference(name, ref string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.vols[name]
	if !ok {
		return notFound(name)
	}
	e.refs[ref] = struct{}{}
	return nil
}

// Release drops ref's reference.
func (s *Store) Release(name, ref string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if e, ok := s.vols[name]; ok {
		delete(e.refs, ref)
	}
}

// Mount makes the volume's data available for ref and returns its path.
// The driver mounts on the first user only.
func (s *Store) Mount(name, ref string) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.vols[name]
	if !ok {
		return "", notFound(name)
	}
	p := s.Path(name)
	if len(e.mounts) == 0 {
		if err := s.driver.Mount(p, e.Options); err != nil {
			return "", fmt.Errorf("mount volume %s: %w", name, err)
		}
	}
	e.mounts[ref] = struct{}{}
	e.refs[ref] = struct{}{}
	return p, nil
}

// Unmount undoes ref's Mount; the last one unmounts.
func (s *Store) Unmount(name, ref string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.vols[name]
	if !ok {
		return nil
	}
	if _, ok := e.mounts[ref]; !ok {
		return nil
	}
	delete(e.mounts, ref)
	if len(e.mounts) == 0 {
		return s.driver.Unmount(s.Path(name), e.Options)
	}
	return nil
}

// Remove deletes the volume. One a container references is refused
// (Docker's 409); force makes a missing volume no error.
func (s *Store) Remove(name string, force bool) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.vols[name]
	if !ok {
		if force {
			return nil
		}
		return notFound(name)
	}
	return s.removeLocked(e)
}

func (s *Store) removeLocked(e *entry) error {
	if len(e.refs) > 0 {
		return errdefs.Conflict(fmt.Errorf("remove %s: volume is in use - [%s]", e.Name, strings.Join(sortedKeys(e.refs), ", ")))
	}
	dir := filepath.Join(s.root, e.Name)
	// Unmounted in case a daemon crash left the driver's mount behind.
	_ = s.driver.Unmount(s.Path(e.Name), e.Options)
	// The record first: once it is gone the volume is, and what is left
	// of the directory is removed by the next New if this fails.
	if err := os.Remove(filepath.Join(dir, recordFile)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("remove %s: %w", e.Name, err)
	}
	delete(s.vols, e.Name)
	if err := os.RemoveAll(dir); err != nil {
		slog.Error("volumes: remove data", "name", e.Name, "err", err)
	}
	return nil
}

// ListFilters are the filters `volume ls` and prune take.
var listFilters = map[string]bool{"dangling": true, "name": true, "label": true, "driver": true}

// List returns the volumes filters select, by name. Filters: dangling
// (true/false, 1/0), name (substring), label (key or key=value), driver.
func (s *Store) List(f filters.Args) ([]Volume, error) {
	if err := f.Validate(listFilters); err != nil {
		return nil, errdefs.InvalidParameter(err)
	}
	dangling, err := danglingFilter(f)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Volume
	for _, e := range s.vols {
		if dangling != nil && *dangling != (len(e.refs) == 0) {
			continue
		}
		if f.Contains("name") && !f.Match("name", e.Name) {
			continue
		}
		if f.Contains("driver") && !f.ExactMatch("driver", e.Driver) {
			continue
		}
		if f.Contains("label") && !f.MatchKVList("label", e.Labels) {
			continue
		}
		out = append(out, e.copy())
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

func danglingFilter(f filters.Args) (*bool, error) {
	if !f.Contains("dangling") {
		return nil, nil
	}
	var b bool
	switch {
	case f.ExactMatch("dangling", "true") || f.ExactMatch("dangling", "1"):
		b = true
	case f.ExactMatch("dangling", "false") || f.ExactMatch("dangling", "0"):
		b = false
	default:
		return nil, errdefs.InvalidParameter(fmt.Errorf("invalid filter 'dangling=%s'", strings.Join(f.Get("dangling"), ",")))
	}
	return &b, nil
}

var pruneFilters = map[string]bool{"label": true, "label!": true, "all": true}

// Prune removes the volumes no container references: only anonymous ones
// unless all; label and label! filter them. It returns the names removed
// and the bytes freed.
func (s *Store) Prune(f filters.Args, all bool) ([]string, uint64, error) {
	if err := f.Validate(pruneFilters); err != nil {
		return nil, 0, errdefs.InvalidParameter(err)
	}
	if f.Contains("all") {
		switch v := f.Get("all"); {
		case f.ExactMatch("all", "1") || f.ExactMatch("all", "true"):
			all = true
		case f.ExactMatch("all", "0") || f.ExactMatch("all", "false"):
		default:
			return nil, 0, errdefs.InvalidParameter(fmt.Errorf("invalid filter 'all=%s': invalid value", strings.Join(v, ",")))
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var names []string
	var freed uint64
	for _, name := range slices.Sorted(maps.Keys(s.vols)) {
		e := s.vols[name]
		if len(e.refs) > 0 || (!all && !e.Anonymous()) {
			continue
		}
		if f.Contains("label") && !f.MatchKVList("label", e.Labels) {
			continue
		}
		if f.Contains("label!") && f.MatchKVList("label!", e.Labels) {
			continue
		}
		size := dirSize(s.Path(name))
		if err := s.removeLocked(e); err != nil {
			slog.Warn("volumes: prune", "name", name, "err", err)
			continue
		}
		names = append(names, name)
		if size > 0 {
			freed += uint64(size)
		}
	}
	return names, freed, nil
}

// Usage is the size of the volume's data and the number of containers
// that reference it (system df's UsageData); -1 when not known.
func (s *Store) Usage(name string) (size int64, refCount int64) {
	s.mu.Lock()
	e, ok := s.vols[name]
	n := int64(len(e.refs))
	s.mu.Unlock()
	if !ok {
		return -1, -1
	}
	return dirSize(s.Path(name)), n
}

// dirSize counts the bytes of regular files under dir, each inode once.
func dirSize(dir string) int64 {
	var n int64
	seen := map[uint64]bool{}
	_ = filepath.WalkDir(dir, func(_ string, d os.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return nil
		}
		fi, err := d.Info()
		if err != nil {
			return nil
		}
		if ino, ok := inode(fi); ok {
			if seen[ino] {
				return nil
			}
			seen[ino] = true
		}
		n += fi.Size()
		return nil
	})
	return n
}

// API is the volume as the Engine API shows it.
func (s *Store) API(v Volume) *volumetypes.Volume {
	out := &volumetypes.Volume{
		Name:       v.Name,
		Driver:     v.Driver,
		Mountpoint: s.Path(v.Name),
		CreatedAt:  v.CreatedAt.Format(time.RFC3339),
		Scope:      "local",
		Labels:     v.Labels,
		Options:    v.Options,
	}
	return out
}
