// Package archive extracts and produces layer tarballs safely.
//
// Extraction treats every entry name as relative to the destination and
// resolves parent directories inside it, so no entry (through "..",
// absolute names, symlinks or hard links) can touch anything outside.
package archive

import (
	"bufio"
	"fmt"
	"io"
	"path"
	"strings"

	// klauspost's gzip decodes three times as fast as compress/gzip here
	// (a pulled layer is decoded as it is extracted).
	"github.com/klauspost/compress/gzip"

	"github.com/sdengine/engine/pkg/errdefs"
)

// WhiteoutMode says what to do with AUFS-style ".wh." entries.
type WhiteoutMode int

const (
	// WhiteoutNone extracts ".wh." entries as ordinary files (used for
	// outer `docker save` tarballs, which are not layers).
	WhiteoutNone WhiteoutMode = iota
	// WhiteoutOverlay converts them to overlayfs whiteouts: a 0/0 char
	// device for a removed file, trusted.overlay.opaque=y for an opaque dir.
	WhiteoutOverlay
	// WhiteoutDelete applies them to a full copy of the lower tree by
	// deleting the named path, or the directory's earlier content.
	WhiteoutDelete
)

const (
	whPrefix = ".wh."
	whOpaque = ".wh..wh..opq"
	// whMeta prefixes AUFS bookkeeping entries (e.g. .wh..wh.plnk) that
	// carry no meaning for other drivers.
	whMeta = ".wh..wh."
)

// ApplyOptions tunes Apply.
type ApplyOptions struct {
	Whiteouts WhiteoutMode
	// Digest, if set, receives the complete uncompressed tar stream as it
	// is read, so a caller can hash it (diff ID) without a second pass.
	Digest io.Writer
	// Meta, if set, receives a compact record of the stream (headers and
	// padding verbatim, file contents as references) that Replay can turn
	// back into the byte-identical tar from the extracted tree.
	Meta io.Writer
	// Check, if set, is called with the bytes written so far before the
	// first entry and then each time CheckEvery more have been written,
	// in the middle of a file too (a file's content counts, and every
	// entry a block for its inode and directory entry). An error stops
	// the extraction and is returned as it is. It is how a caller watches
	// the free space of dest's filesystem without a statfs per write.
	Check func(written int64) error
	// CheckEvery defaults to DefaultCheckEvery.
	CheckEvery int64
}

// DefaultCheckEvery is how often (in bytes written) Apply calls
// ApplyOptions.Check unless told otherwise: a statfs every 4 MiB costs
// nothing next to the writes, and overshoots a limit by at most that.
const DefaultCheckEvery = 4 << 20

// entryCost is what Check counts for an entry besides its content.
const entryCost = 4096

func invalid(format string, args ...any) error {
	return errdefs.InvalidParameter(fmt.Errorf(format, args...))
}

// decompress sniffs the stream's magic and undoes gzip compression.
func decompress(r io.Reader) (io.Reader, func() error, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	magic, _ := br.Peek(4)
	switch {
	case len(magic) >= 2 && magic[0] == 0x1f && magic[1] == 0x8b:
		gz, err := gzip.NewReader(br)
		if err != nil {
			return nil, nil, invalid("invalid gzip stream: %w", err)
		}
		return gz, gz.Close, nil
	case len(magic) == 4 && magic[0] == 0x28 && magic[1] == 0xb5 && magic[2] == 0x2f && magic[3] == 0xfd:
		return nil, nil, errdefs.NotImplemented(fmt.Errorf("zstd-compressed layers are not supported"))
	}
	return br, func() error { return nil }, nil
}

// cleanName maps a tar entry name to a clean path relative to the root.
// Leading slashes are dropped (as docker does); anything still climbing
// out of the root after cleaning is hostile.
func cleanName(name string) (string, error) {
	rel := path.Clean("/" + name)
	// path.Clean of a rooted path can never keep "..", so compare against
	// the non-rooted form to spot entries that tried to escape.
	if raw := path.Clean(strings.TrimLeft(name, "/")); raw == ".." || strings.HasPrefix(raw, "../") {
		return "", invalid("tar entry %q escapes the destination", name)
	}
	rel = strings.TrimPrefix(rel, "/")
	if rel == "" {
		rel = "."
	}
	return rel, nil
}
