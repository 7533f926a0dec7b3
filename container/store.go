package container

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"

	"github.com/sdengine/engine/pkg/errdefs"
)

// validName is Docker's rule for container names.
var validName = regexp.MustCompile(`^/?[a-zA-Z0-9][a-zA-Z0-9_.-]+$`)

// Store indexes containers by ID and name and resolves references the way
// Docker does: full ID, exact name, then a unique ID prefix.
type Store struct {
	root  string
	mu    sync.RWMutex
	byID  map[string]*Container
	names map[string]string // "/name" -> ID

	// What NewStore found besides records: directories without a record
	// (a create or a removal cut short by a crash) and directories whose
	// record cannot be read (damage: left alone, and their layers too).
	noRecord   []string
	unreadable []string
}

// NewStore loads every container under root. A record that cannot be read
// is logged and skipped; it never stops the others from loading.
func NewStore(root string) (*Store, error) {
	if err := os.MkdirAll(root, 0o710); err != nil {
		return nil, fmt.Errorf("create containers dir: %w", err)
	}
	s := &Store{root: root, byID: map[string]*Container{}, names: map[string]string{}}
	entries, err := os.ReadDir(root)
	if err != nil {
		return nil, fmt.Errorf("read containers dir: %w", err)
	}
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		c, err := Load(filepath.Join(root, e.Name()))
		if errors.Is(err, fs.ErrNotExist) {
			s.noRecord = append(s.noRecord, e.Name())
			continue
		}
		if err != nil {
			slog.Error("skipping container whose record cannot be read", "id", e.Name(), "err", err)
			s.unreadable = append(s.unreadable, e.Name())
			continue
		}
		if other, taken := s.names[c.Name]; taken {
			slog.Error("two containers claim one name; keeping the first", "name", c.Name, "id", c.ID, "other", other)
			c.Name = "/" + c.ID
		}
		s.byID[c.ID] = c
		s.names[c.Name] = c.ID
	}
	return s, nil
}

// NoRecord lists the directories NewStore found without a record: what a
// create or a removal cut short by a crash left. The daemon's recovery
// removes them.
func (s *Store) NoRecord() []string { return append([]string(nil), s.noRecord...) }

// Unreadable lists the directories whose record exists but cannot be read.
// Nothing of theirs is removed: the record may be repaired by hand.
func (s *Store) Unreadable() []string { return append([]string(nil), s.unreadable...) }

// Root is the directory container records live in.
func (s *Store) Root() string { return s.root }

// ValidateName checks a user-given name and returns it with its "/".
func ValidateName(name string) (string, error) {
	if !validName.MatchString(name) {
		return "", errdefs.InvalidParameter(fmt.Errorf("Invalid container name (%s), only [a-zA-Z0-9][a-zA-Z0-9_.-] are allowed", name))
	}
	if !strings.HasPrefix(name, "/") {
		name = "/" + name
	}
	return name, nil
}

// Add reserves c's name and indexes it.
func (s *Store) Add(c *Container) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if id, taken := s.names[c.Name]; taken {
		return errdefs.Conflict(fmt.Errorf("Conflict. The container name %q is already in use by container %q. You have to remove (or rename) that container to be able to reuse that name.", c.Name, id))
	}
	s.byID[c.ID] = c
	s.names[c.Name] = c.ID
	return nil
}

// Rename moves c to name (with its "/"), which must be free. The caller
// holds c's lock.
func (s *Store) Rename(c *Container, name string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if id, taken := s.names[name]; taken {
		return errdefs.Conflict(fmt.Errorf("Conflict. The container name %q is already in use by container %q. You have to remove (or rename) that container to be able to reuse that name.", name, id))
	}
	if s.names[c.Name] == c.ID {
		delete(s.names, c.Name)
	}
	s.names[name] = c.ID
	c.Name = name
	return nil
}

// Remove forgets c.
func (s *Store) Remove(c *Container) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.byID, c.ID)
	if s.names[c.Name] == c.ID {
		delete(s.names, c.Name)
	}
}

// Registered reports whether container id is still in the store (a
// removal that finished deregistered it).
func (s *Store) Registered(id string) bool {
	s.mu.RLock()
	defer s.mu.RUnlock()
	_, ok := s.byID[id]
	return ok
}

// Get resolves ref (ID, name, or unique ID prefix).
func (s *Store) Get(ref string) (*Container, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if ref == "" {
		return nil, errdefs.InvalidParameter(fmt.Errorf("no container name or ID given"))
	}
	if c, ok := s.byID[ref]; ok {
		return c, nil
	}
	name := ref
	if !strings.HasPrefix(name, "/") {
		name = "/" + name
	}
	if id, ok := s.names[name]; ok {
		return s.byID[id], nil
	}
	if c := s.linkedLocked(name); c != nil {
		return c, nil
	}
	var found *Container
	for id, c := range s.byID {
		if strings.HasPrefix(id, ref) {
			if found != nil {
				return nil, errdefs.InvalidParameter(fmt.Errorf("multiple IDs found with provided prefix: %s", ref))
			}
			found = c
		}
	}
	if found == nil {
		return nil, errdefs.NotFound(fmt.Errorf("No such container: %s", ref))
	}
	return found, nil
}

// linkedLocked is the container a link name "/PARENT/ALIAS" names (as
// Docker registers links among the names), or nil. The caller holds s.mu.
func (s *Store) linkedLocked(name string) *Container {
	parent, alias, ok := strings.Cut(strings.TrimPrefix(name, "/"), "/")
	if !ok || alias == "" {
		return nil
	}
	p, ok := s.byID[s.names["/"+parent]]
	if !ok {
		return nil
	}
	return s.byID[p.Links[alias]]
}

// SetLinks records c's links (alias → linked container's ID). The caller
// holds c's lock.
func (s *Store) SetLinks(c *Container, links map[string]string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c.Links = links
}

// RemoveLink removes the link "/PARENT/ALIAS" from its parent (docker rm
// --link) and returns the parent, whose record the caller saves.
func (s *Store) RemoveLink(name string) (*Container, error) {
	parent, alias, ok := strings.Cut(strings.TrimPrefix(name, "/"), "/")
	s.mu.RLock()
	p := s.byID[s.names["/"+parent]]
	s.mu.RUnlock()
	if !ok || p == nil {
		return nil, errdefs.NotFound(fmt.Errorf("No such link: %s", name))
	}
	p.Lock()
	defer p.Unlock()
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := p.Links[alias]; !ok {
		return nil, errdefs.NotFound(fmt.Errorf("No such link: %s", name))
	}
	links := map[string]string{}
	for a, id := range p.Links {
		if a != alias {
			links[a] = id
		}
	}
	if len(links) == 0 {
		links = nil
	}
	p.Links = links
	if err := p.SaveLocked(); err != nil {
		return nil, err
	}
	return p, nil
}

// LinkNames are the names other containers' links give container id
// ("/PARENT/ALIAS"), sorted: Docker lists them among its names.
func (s *Store) LinkNames(id string) []string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	var out []string
	for _, p := range s.byID {
		for alias, child := range p.Links {
			if child == id {
				out = append(out, p.Name+"/"+alias)
			}
		}
	}
	sort.Strings(out)
	return out
}

// Links are c's links as Docker shows them in HostConfig.Links
// ("/CHILD:/PARENT/ALIAS"), sorted; a linked container since removed is
// left out. The caller holds c's lock.
func (s *Store) Links(c *Container) []string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	var out []string
	for alias, id := range c.Links {
		if child, ok := s.byID[id]; ok {
			out = append(out, child.Name+":"+c.Name+"/"+alias)
		}
	}
	sort.Strings(out)
	return out
}

// List returns all containers, newest first.
func (s *Store) List() []*Container {
	s.mu.RLock()
	out := make([]*Container, 0, len(s.byID))
	for _, c := range s.byID {
		out = append(out, c)
	}
	s.mu.RUnlock()
	sort.Slice(out, func(i, j int) bool { return out[i].Created.After(out[j].Created) })
	return out
}
