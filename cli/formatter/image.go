package formatter

import (
	"encoding/json"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/docker/docker/api/types/image"
	units "github.com/docker/go-units"
)

// Default formats of "docker images".
const (
	ImageTableFormat       = "table {{.Repository}}\t{{.Tag}}\t{{.ID}}\t{{.CreatedSince}}\t{{.Size}}"
	ImageTableDigestFormat = "table {{.Repository}}\t{{.Tag}}\t{{.Digest}}\t{{.ID}}\t{{.CreatedSince}}\t{{.Size}}"
	ImageQuietFormat       = "{{.ID}}"
)

// ImageHeaders are docker's column titles for image fields.
var ImageHeaders = Headers{
	"Repository": "REPOSITORY", "Tag": "TAG", "Digest": "DIGEST", "ID": "IMAGE ID",
	"CreatedSince": "CREATED", "CreatedAt": "CREATED AT", "Size": "SIZE",
	"Containers": "CONTAINERS", "VirtualSize": "SIZE", "SharedSize": "SHARED SIZE",
	"UniqueSize": "UNIQUE SIZE",
}

const none = "<none>"

// Image is one "docker images" row: an image under one repository:tag.
type Image struct {
	I       image.Summary
	Repo    string
	TagName string
	DigestV string
	Trunc   bool
	Now     time.Time
}

// ImageRows expands an image into one row per reference, the way docker
// lists an image once per repository:tag (and "<none>" when untagged).
func ImageRows(img image.Summary, trunc bool) []Image {
	digests := map[string]string{} // repo -> digest
	for _, rd := range img.RepoDigests {
		repo, dg, ok := strings.Cut(rd, "@")
		if ok && repo != none {
			digests[repo] = dg
		}
	}
	var rows []Image
	tagged := map[string]bool{}
	tags := append([]string(nil), img.RepoTags...)
	sort.Strings(tags)
	for _, rt := range tags {
		if rt == "<none>:<none>" {
			continue
		}
		repo, tag := SplitRepoTag(rt)
		tagged[repo] = true
		rows = append(rows, Image{I: img, Repo: repo, TagName: tag, DigestV: digests[repo], Trunc: trunc})
	}
	var untaggedRepos []string
	for repo := range digests {
		if !tagged[repo] {
			untaggedRepos = append(untaggedRepos, repo)
		}
	}
	sort.Strings(untaggedRepos)
	for _, repo := range untaggedRepos {
		rows = append(rows, Image{I: img, Repo: repo, TagName: none, DigestV: digests[repo], Trunc: trunc})
	}
	if len(rows) == 0 {
		rows = append(rows, Image{I: img, Repo: none, TagName: none, Trunc: trunc})
	}
	return rows
}

// SplitRepoTag splits "host:5000/name:tag" at the tag colon (the last colon
// after the last slash); a reference without a tag gets "<none>".
func SplitRepoTag(ref string) (repo, tag string) {
	i := strings.LastIndex(ref, ":")
	if i < 0 || strings.Contains(ref[i+1:], "/") {
		return ref, none
	}
	return ref[:i], ref[i+1:]
}

// Repository is the repository name or "<none>".
func (i Image) Repository() string { return i.Repo }

// Tag is the tag or "<none>".
func (i Image) Tag() string { return i.TagName }

// Digest is the repository digest or "<none>".
func (i Image) Digest() string {
	if i.DigestV == "" {
		return none
	}
	return i.DigestV
}

// ID is the image ID: 12 hex characters, or the full "sha256:..." with --no-trunc.
func (i Image) ID() string {
	if i.Trunc {
		return TruncateID(i.I.ID)
	}
	return i.I.ID
}

// CreatedSince is the human age in the CREATED column.
func (i Image) CreatedSince() string {
	if i.I.Created <= 0 {
		return "N/A"
	}
	now := i.Now
	if now.IsZero() {
		now = time.Now()
	}
	return units.HumanDuration(now.Sub(time.Unix(i.I.Created, 0))) + " ago"
}

// CreatedAt is the creation time in Go's default format.
func (i Image) CreatedAt() string { return time.Unix(i.I.Created, 0).String() }

// Size is the image size with docker's 3 significant digits ("4.86MB").
func (i Image) Size() string { return units.HumanSizeWithPrecision(float64(i.I.Size), 3) }

// VirtualSize is kept for old templates; docker prints it with 4 digits.
func (i Image) VirtualSize() string { return units.HumanSize(float64(i.I.Size)) }

// SharedSize is the size shared with other images, when known.
func (i Image) SharedSize() string {
	if i.I.SharedSize < 0 {
		return "N/A"
	}
	return units.HumanSizeWithPrecision(float64(i.I.SharedSize), 3)
}

// UniqueSize is Size minus SharedSize, when known.
func (i Image) UniqueSize() string {
	if i.I.SharedSize < 0 {
		return "N/A"
	}
	return units.HumanSizeWithPrecision(float64(i.I.Size-i.I.SharedSize), 3)
}

// Containers is the number of containers using the image, when known.
func (i Image) Containers() string {
	if i.I.Containers < 0 {
		return "N/A"
	}
	return strconv.FormatInt(i.I.Containers, 10)
}

// MarshalJSON makes {{json .}} print every column.
func (i Image) MarshalJSON() ([]byte, error) {
	return json.Marshal(map[string]string{
		"Repository": i.Repository(), "Tag": i.Tag(), "Digest": i.Digest(), "ID": i.ID(),
		"CreatedSince": i.CreatedSince(), "CreatedAt": i.CreatedAt(), "Size": i.Size(),
		"VirtualSize": i.VirtualSize(), "SharedSize": i.SharedSize(), "UniqueSize": i.UniqueSize(),
		"Containers": i.Containers(),
	})
}
