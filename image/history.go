package image

import (
	"sort"

	imagetypes "github.com/docker/docker/api/types/image"
	"github.com/opencontainers/go-digest"
)

// History renders `docker history` for ref, newest first, as Docker's
// classic store does: one row per history entry of the config, the size
// of the layer the entry made (0 for an empty layer), and the ID of the
// image each row belongs to for as long as the chain of parents goes
// ("<missing>" past it: an entry made elsewhere, without an image here).
func (s *Store) History(ref string) ([]*imagetypes.HistoryResponseItem, error) {
	img, err := s.Get(ref)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	var sizes []int64
	if in := s.images[img.ID]; in != nil {
		for _, c := range in.chain {
			if l := s.layers[c]; l != nil {
				sizes = append(sizes, l.Size)
			} else {
				sizes = append(sizes, 0)
			}
		}
	}
	s.mu.Unlock()

	var out []*imagetypes.HistoryResponseItem
	layer := 0
	for _, h := range img.Config.History {
		var size int64
		if !h.EmptyLayer {
			if layer < len(sizes) {
				size = sizes[layer]
			}
			layer++
		}
		item := &imagetypes.HistoryResponseItem{ID: "<missing>", CreatedBy: h.CreatedBy, Comment: h.Comment, Size: size, Tags: nil}
		if h.Created != nil {
			item.Created = h.Created.Unix()
		}
		out = append([]*imagetypes.HistoryResponseItem{item}, out...)
	}
	id := img.ID
	for _, item := range out {
		item.ID = id.String()
		item.Tags = s.tagsOf(id)
		if id = s.Parent(id); id == "" {
			break
		}
	}
	return out, nil
}

func (s *Store) tagsOf(id digest.Digest) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var tags []string
	for t, tid := range s.tags {
		if tid == id {
			tags = append(tags, t)
		}
	}
	sort.Strings(tags)
	return tags
}
