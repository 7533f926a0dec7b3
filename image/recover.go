package image

import (
	"log/slog"
	"os"
	"path/filepath"
	"strings"
)

// Crash consistency. Every step that adds to the store writes its data
// first and its metadata last, and every removal goes the other way, so
// the metadata on disk is always the truth and whatever it does not name
// is the trace of an operation a crash cut short:
//
//	add a layer     driver dir + extract -> replay record -> layer metadata (commit)
//	add an image    its layers -> image config (commit) -> tags
//	remove image    image config (commit) -> per layer: metadata, record, driver dir -> tags
//	remove RW layer record (commit) -> driver dir
//
// At open, after the metadata is loaded, recover undoes them: layers no
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

func (s *Store) recover(rec *recovery) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if rec.unsure {
		slog.Error("image store: some metadata could not be read; nothing unreferenced is removed at this start")
	} else {
		for id, l := range s.layers {
			if l.refs == 0 {
				slog.Info("image store: removing a layer no image or container holds (an interrupted load, import or removal)", "chain", id)
				s.removeLayerLocked(l)
				rec.actions++
			}
		}
		s.removeOrphanRecordsLocked(rec)
		s.removeOrphanDirsLocked(rec)
	}
	if rec.tagsDirty && !rec.unsure {
		if err := s.saveTagsLocked(); err != nil {
			slog.Warn("image store: cannot rewrite repositories.json without its stale tags", "err", err)
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
