package formatter

import (
	"encoding/json"
	"strconv"
	"strings"

	"github.com/docker/docker/api/types/registry"
)

// SearchTableFormat is "docker search"'s default.
const SearchTableFormat = "table {{.Name}}\t{{.Description}}\t{{.StarCount}}\t{{.IsOfficial}}"

// SearchHeaders are docker's column titles for search fields.
var SearchHeaders = Headers{
	"Name": "NAME", "Description": "DESCRIPTION", "StarCount": "STARS", "IsOfficial": "OFFICIAL", "IsAutomated": "AUTOMATED",
}

// searchDescriptionWidth is where docker cuts a description.
const searchDescriptionWidth = 45

// SearchResult is one "docker search" row.
type SearchResult struct {
	R       registry.SearchResult
	NoTrunc bool
}

func (s SearchResult) Name() string { return s.R.Name }

// Description is on one line, cut at 45 runes unless --no-trunc.
func (s SearchResult) Description() string {
	d := strings.NewReplacer("\n", " ", "\r", " ").Replace(s.R.Description)
	if !s.NoTrunc {
		d = Ellipsis(d, searchDescriptionWidth)
	}
	return d
}

func (s SearchResult) StarCount() string { return strconv.Itoa(s.R.StarCount) }

// IsOfficial is "[OK]" or empty, as docker's table shows it.
func (s SearchResult) IsOfficial() string { return okMark(s.R.IsOfficial) }

// IsAutomated is always empty: the field is deprecated, the daemon
// always answers false (as Docker's does).
func (s SearchResult) IsAutomated() string { return "" }

func okMark(b bool) string {
	if b {
		return "[OK]"
	}
	return ""
}

// MarshalJSON is the row as {{json .}} prints it: booleans as "true"/"false".
func (s SearchResult) MarshalJSON() ([]byte, error) {
	return json.Marshal(map[string]string{
		"Name": s.Name(), "Description": s.Description(), "StarCount": s.StarCount(),
		"IsOfficial": strconv.FormatBool(s.R.IsOfficial), "IsAutomated": "false",
	})
}
