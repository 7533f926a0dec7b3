package image

import (
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"github.com/opencontainers/go-digest"
)

// Crash consistency. Every step that adds to the store writes its data
// first and its metadata last, and every removal goes the other way, so
// the metadata on disk is always the truth and whatever it does not name
// is the trace of an operation a crash cut short:
//
//	add a layer     driver dir + extract -> replay record -> layer metadata (commit)
//	add an image    its layers -> tag intent -> image config (commit) -> tags -> drop intent
//	remove image    image config (commit) -> per layer: metadata, record, driver dir -> tags
//	remove RW layer record (commit) -> driver dir
//
// At open, after the metadata is loaded, recover finishes or undoes them:
// a tag intent is carried out when its image was committed and dropped
// when not (a half-loaded image is then complete, or absent); layers no
// image or container holds, replay records without metadata, and driver
// directories that no layer or RW layer names are removed. Each action is
// logged.

// recovery collects what loading the metadata found.
type recovery struct {
	// unsure is set when some metadata could not be read (an I/O error,
	// not damage): whatever it refers to may look unreferenced, so
	// nothing unreferenced is removed at this open.
	unsure bool
	// tagsDirty: repositories.json names images that are gone.
	tagsDirty bool
	actions   int
}

// removeFile deletes a metadata file found broken for good (or left by
// an interrupted operation), saying why.
func (r *recovery) removeFile(path, why string, args ...any) {
	slog.Warn("image store: removing "+why, append(args, "file", path)...)
	if err := os.Remove(path); err != nil && !os.IsNotExist(err) {
		slog.Error("image store: remove", "file", path, "err", err)
	}
	r.actions++
}

// tagIntent is written before an image's config, naming the tags the
// load or import will set.
type tagIntent struct {
	Image digest.Digest `json:"image"`
	Tags  []string      `json:"tags"`
}

func (s *Store) intentPath(id digest.Digest) string {
	return filepath.Join(s.intentDir(), id.Encoded()+".json")
}

// finishIntentsLocked applies the tags of interrupted loads and imports
// whose image was committed. It returns the intent files done with, to
// be removed once the tags are saved.
func (s *Store) finishIntentsLocked(rec *recovery) []string {
	ents, err := os.ReadDir(s.intentDir())
	if err != nil {
		slog.Error("image store: cannot list tag intents", "err", err)
		return nil
	}
	var done []string
	for _, e := range ents {
		p := filepath.Join(s.intentDir(), e.Name())
		if strings.HasPrefix(e.Name(), ".") {
			os.Remove(p) // torn temp file
			continue
		}
		data, err := os.ReadFile(p)
		var in tagIntent
		if err == nil {
			err = json.Unmarshal(data, &in)
		}
		if err != nil {
			rec.removeFile(p, "unreadable tag intent", "err", err)
			continue
		}
		if s.images[in.Image] == nil {
			if rec.unsure {
				continue // the image may be among what could not be read
			}
			slog.Info("image store: an interrupted load or import never committed its image; it is absent", "image", in.Image, "tags", in.Tags)
			done = append(done, p)
			rec.actions++
			continue
		}
		var set []string
		for _, t := range in.Tags {
			if norm, err := normalizeTag(t); err == nil {
				s.tags[norm] = in.Image
				set = append(set, norm)
			}
		}
		slog.Info("image store: finishing an interrupted load or import: tagging its image", "image", in.Image, "tags", set)
		rec.tagsDirty = true
		done = append(done, p)
		rec.actions++
	}
	return done
}

func (s *Store) recover(rec *recovery) {
	s.mu.Lock()
	defer s.mu.Unlock()
	intents := s.finishIntentsLocked(rec)
	if rec.unsure {
		slog.Error("image store: some metadata could not be read; nothing unreferenced is removed at this start")
	} else {
		for id, l := range s.layers {
			if l.refs == 0 && fileExists(s.pulledMarker(id)) {
				slog.Info("image store: keeping a layer an interrupted pull completed, for the next pull", "chain", id)
				continue
			}
			if l.refs == 0 {
				slog.Info("image store: removing a layer no image or container holds (an interrupted load, import or removal)", "chain", id)
				s.removeLayerLocked(l)
				rec.actions++
			}
		}
		s.removeOrphanRecordsLocked(rec)
		s.removeOrphanDirsLocked(rec)
		if ents, err := os.ReadDir(s.pulledDir()); err == nil {
			for _, e := range ents {
				if s.layers[digest.NewDigestFromEncoded(digest.SHA256, e.Name())] == nil {
					os.Remove(filepath.Join(s.pulledDir(), e.Name()))
				}
			}
		}
	}
	// Unsure, the tags on disk are left as they are (some may name images
	// that could not be read), and so are the intents, for the next start.
	saved := !rec.unsure
	if saved && rec.tagsDirty {
		if err := s.saveTagsLocked(); err != nil {
			slog.Warn("image store: cannot save the recovered tags; the next start tries again", "err", err)
			saved = false
		}
	}
	if saved {
		for _, p := range intents {
			os.Remove(p)
		}
	}
	if rec.actions > 0 {
		slog.Info("image store: recovered from interrupted operations", "actions", rec.actions,
			"images", len(s.images), "layers", len(s.layers), "rw-layers", len(s.mounts))
	}
}

// removeOrphanRecordsLocked removes replay records whose layer metadata
// was never written (a crash just before the commit) or is gone.
func (s *Store) removeOrphanRecordsLocked(rec *recovery) {
	ents, err := os.ReadDir(s.layerDir())
	if err != nil {
		slog.Error("image store: cannot list layers", "err", err)
		return
	}
	for _, e := range ents {
		hex, ok := strings.CutSuffix(e.Name(), ".tar.gz")
		if !ok || strings.HasPrefix(hex, ".") {
			continue
		}
		if _, err := os.Lstat(filepath.Join(s.layerDir(), hex+".json")); os.IsNotExist(err) {
			rec.removeFile(filepath.Join(s.layerDir(), e.Name()), "a layer record without metadata")
		}
	}
}

// removeOrphanDirsLocked removes the driver's layer directories that no
// layer and no container's RW layer names: a layer being applied when the
// daemon died, or one whose removal it did not finish.
func (s *Store) removeOrphanDirsLocked(rec *recovery) {
	ids, err := s.driver.List()
	if err != nil {
		slog.Error("image store: cannot list layer directories", "err", err)
		return
	}
	named := map[string]bool{}
	for _, l := range s.layers {
		named[l.CacheID] = true
	}
	for _, rw := range s.mounts {
		named[rw.CacheID] = true
	}
	for _, id := range ids {
		if named[id] {
			continue
		}
		slog.Warn("image store: removing a layer directory no metadata names (an interrupted load, import or removal)", "dir", id)
		if err := s.driver.Remove(id); err != nil {
			slog.Error("image store: remove layer directory", "dir", id, "err", err)
		}
		rec.actions++
	}
}

func fileExists(p string) bool {
	_, err := os.Lstat(p)
	return err == nil
}
