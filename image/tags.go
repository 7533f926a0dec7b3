package image

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	eventtypes "github.com/docker/docker/api/types/events"
	"github.com/opencontainers/go-digest"

	"github.com/sdengine/engine/internal/crashpoint"
	"github.com/sdengine/engine/pkg/atomicfile"
	"github.com/sdengine/engine/pkg/errdefs"
)

// repositoriesFile mirrors docker's repositories.json:
// {"Repositories": {"busybox": {"busybox:latest": "sha256:..."}}}.
type repositoriesFile struct {
	Repositories map[string]map[string]digest.Digest
}

func (s *Store) tagsPath() string { return filepath.Join(s.root, "repositories.json") }

func (s *Store) loadTags(rec *recovery) {
	data, err := os.ReadFile(s.tagsPath())
	if os.IsNotExist(err) {
		return
	}
	var f repositoriesFile
	if err == nil {
		err = json.Unmarshal(data, &f)
	}
	if err != nil {
		// Keep the damaged file for inspection; images stay, untagged.
		bad := fmt.Sprintf("%s.corrupt-%d", s.tagsPath(), time.Now().Unix())
		slog.Error("image store: repositories.json is corrupt, images are loaded untagged", "err", err, "moved-to", bad)
		os.Rename(s.tagsPath(), bad)
		return
	}
	for _, tags := range f.Repositories {
		for tag, id := range tags {
			norm, err := normalizeTag(tag)
			if err != nil || s.images[id] == nil {
				slog.Warn("image store: dropping stale tag", "tag", tag, "id", id)
				rec.tagsDirty = true
				continue
			}
			s.tags[norm] = id
		}
	}
}

// saveTagsLocked writes repositories.json. It goes through a reserved
// write (atomicfile.WriteReserved: the new content overwrites a spare of
// allocated blocks that is then exchanged with the file), so that a
// removal, whose tags only shrink, rewrites it on a full filesystem.
func (s *Store) saveTagsLocked() error {
	f := repositoriesFile{Repositories: map[string]map[string]digest.Digest{}}
	for tag, id := range s.tags {
		repo, _ := splitTag(tag)
		if f.Repositories[repo] == nil {
			f.Repositories[repo] = map[string]digest.Digest{}
		}
		f.Repositories[repo][tag] = id
	}
	data, err := json.Marshal(f)
	if err != nil {
		return err
	}
	err = atomicfile.WriteReserved(s.tagsPath(), data, 0o600)
	if err == nil {
		s.tagsStale = false
	}
	return err
}

// Tag points newRef at the image ref names; the tag moves if it was on
// another image.
func (s *Store) Tag(ref string, newRef string) error {
	tag, err := normalizeTag(newRef)
	if err != nil {
		return err
	}
	// "sha256:x" would read as an image ID prefix.
	if repo, _ := splitTag(tag); repo == string(digest.Canonical) {
		return errdefs.InvalidParameter(errors.New("refusing to create an ambiguous tag using digest algorithm as name"))
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	img, _, err := s.resolveLocked(ref)
	if err != nil {
		return err
	}
	s.tags[tag] = img.id
	if err := s.saveTagsLocked(); err != nil {
		return err
	}
	s.event(eventtypes.ActionTag, img.id, tag, img.config.Config.Labels)
	return nil
}

// registerImage stores a config (idempotently) and points tags at it.
// The layers of its chain must exist; the image takes its own reference
// on them. The config is the commit point: before it, a tag intent names
// the tags, so that a crash between the config and the tags is finished
// at the next open (recover.go), and one before the config leaves nothing.
// An error leaves no new image behind. op names the crash points.
func (s *Store) registerImage(op string, raw []byte, tags []string) (*Image, error) {
	img, err := s.parseImage(raw)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range img.chain {
		if s.layers[c] == nil {
			return nil, fmt.Errorf("register image %s: layer %s missing", img.id, c)
		}
	}
	if len(tags) > 0 {
		intent := s.intentPath(img.id)
		data, err := json.Marshal(tagIntent{Image: img.id, Tags: tags})
		if err != nil {
			return nil, err
		}
		if err := atomicfile.Write(intent, data, 0o600); err != nil {
			return nil, fmt.Errorf("register image %s: %w", img.id, err)
		}
		defer func() {
			if err := os.Remove(intent); err != nil {
				slog.Warn("image store: remove tag intent", "file", intent, "err", err)
			}
		}()
	}
	crashpoint.Hit(op + "-before-image-config")
	existing := s.images[img.id]
	if existing != nil {
		img = existing
	} else {
		if err := atomicfile.Write(filepath.Join(s.imageDir(), img.id.Encoded()), raw, 0o600); err != nil {
			return nil, fmt.Errorf("register image %s: %w", img.id, err)
		}
		for _, c := range img.chain {
			s.layers[c].refs++
		}
		s.images[img.id] = img
	}
	if len(tags) == 0 {
		if s.tagsStale && existing == nil {
			// repositories.json may still tag this ID from a removal whose
			// save failed: the new image must not inherit that tag.
			if err := s.saveTagsLocked(); err != nil {
				s.unregisterLocked(img)
				return nil, fmt.Errorf("register image %s: tag: %w", img.id, err)
			}
		}
		return s.snapshot(img), nil
	}
	crashpoint.Hit(op + "-before-tag")
	prev := map[string]digest.Digest{}
	for _, t := range tags {
		if id, ok := s.tags[t]; ok {
			prev[t] = id
		}
		s.tags[t] = img.id
	}
	if err := s.saveTagsLocked(); err != nil {
		for _, t := range tags {
			if id, ok := prev[t]; ok {
				s.tags[t] = id
			} else {
				delete(s.tags, t)
			}
		}
		if existing == nil {
			s.unregisterLocked(img)
		}
		return nil, fmt.Errorf("register image %s: tag: %w", img.id, err)
	}
	return s.snapshot(img), nil
}

// unregisterLocked undoes a registration that could not be finished.
func (s *Store) unregisterLocked(img *image) {
	if err := os.Remove(filepath.Join(s.imageDir(), img.id.Encoded())); err != nil && !os.IsNotExist(err) {
		slog.Error("image store: undo image registration", "id", img.id, "err", err)
	}
	delete(s.images, img.id)
	s.releaseLayersLocked(img.chain)
}
