package formatter

import (
	"bytes"
	"strings"
	"testing"

	"github.com/docker/docker/api/types/registry"
)

func TestSearchTable(t *testing.T) {
	long := "A description that is long enough\nto be cut at forty-five runes by the table"
	items := []any{
		SearchResult{R: registry.SearchResult{Name: "fedora", Description: long, StarCount: 1200, IsOfficial: true}},
		SearchResult{R: registry.SearchResult{Name: "reg:5000/tools/x"}},
	}
	var b bytes.Buffer
	if err := Write(&b, "", SearchTableFormat, SearchHeaders, items); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimRight(b.String(), "\n"), "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[0], "NAME") || !strings.Contains(lines[0], "OFFICIAL") {
		t.Fatalf("table:\n%s", b.String())
	}
	if !strings.Contains(lines[1], "A description that is long enough to be cut …") || !strings.Contains(lines[1], "1200") || !strings.Contains(lines[1], "[OK]") {
		t.Errorf("row: %q", lines[1])
	}
	b.Reset()
	items[0] = SearchResult{R: items[0].(SearchResult).R, NoTrunc: true}
	if err := Write(&b, "{{.Description}}", SearchTableFormat, SearchHeaders, items[:1]); err != nil || strings.TrimSpace(b.String()) != strings.ReplaceAll(long, "\n", " ") {
		t.Errorf("--no-trunc: %q %v", b.String(), err)
	}
	b.Reset()
	if err := Write(&b, "json", SearchTableFormat, SearchHeaders, items[1:]); err != nil ||
		!strings.Contains(b.String(), `"IsOfficial":"false"`) || !strings.Contains(b.String(), `"StarCount":"0"`) {
		t.Errorf("json: %s %v", b.String(), err)
	}
}
