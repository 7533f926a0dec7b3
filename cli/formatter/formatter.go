// Package formatter renders lists the way the docker CLI does: aligned
// tables with fixed column headers, or user --format Go templates with the
// "table" and "json" directives and docker's template helper functions.
package formatter

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"text/template"
	"unicode/utf8"
)

// Directives recognised at the start of a --format value.
const (
	TableDirective = "table"
	JSONDirective  = "json"
)

// Funcs are the helpers docker documents for --format templates.
var Funcs = template.FuncMap{
	"json": func(v any) (string, error) {
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(v); err != nil {
			return "", err
		}
		return strings.TrimSuffix(buf.String(), "\n"), nil
	},
	"join":     strings.Join,
	"split":    strings.Split,
	"lower":    strings.ToLower,
	"upper":    strings.ToUpper,
	"title":    titleCase,
	"println":  fmt.Sprintln,
	"truncate": Ellipsis,
	"pad": func(s string, before, after int) string {
		return strings.Repeat(" ", before) + s + strings.Repeat(" ", after)
	},
}

func titleCase(s string) string {
	words := strings.Fields(s)
	for i, w := range words {
		r, n := utf8.DecodeRuneInString(w)
		words[i] = strings.ToUpper(string(r)) + w[n:]
	}
	return strings.Join(words, " ")
}

// Ellipsis shortens s to at most n runes, marking the cut with "…" like
// docker's truncated COMMAND column.
func Ellipsis(s string, n int) string {
	if n <= 0 {
		return ""
	}
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	if n == 1 {
		return string(r[:1])
	}
	return string(r[:n-1]) + "…"
}

// Parse compiles a user template. The escape sequences \t and \n typed on a
// shell command line are turned into real tabs and newlines, as docker does.
func Parse(format string) (*template.Template, error) {
	format = strings.NewReplacer(`\t`, "\t", `\n`, "\n").Replace(format)
	t, err := template.New("").Funcs(Funcs).Parse(format)
	if err != nil {
		return nil, fmt.Errorf("template parsing error: %w", err)
	}
	return t, nil
}

// Headers maps template field names to column titles. Its Label method lets
// a "{{.Label "x"}}" column get a header instead of failing.
type Headers map[string]string

// Label gives the header of a per-label column.
func (h Headers) Label(name string) string { return name }

// Write renders items (values whose methods the template calls) to out.
//
// format is the user's --format; "" and "table" mean defaultTable (itself a
// "table ..." format), "json" means one JSON object per line.
func Write(out io.Writer, format, defaultTable string, headers Headers, items []any) error {
	switch strings.TrimSpace(format) {
	case "", TableDirective:
		format = defaultTable
	case JSONDirective:
		format = "{{json .}}"
	}
	table := false
	if rest, ok := strings.CutPrefix(format, TableDirective); ok && (rest == "" || rest[0] == ' ' || rest[0] == '\t') {
		table = true
		format = strings.TrimLeft(rest, " \t")
	}
	tmpl, err := Parse(format)
	if err != nil {
		return err
	}
	w := out
	var tw *tabwriter.Writer
	if table {
		// Minimum width 10 and 3 spaces of padding give docker's column layout.
		tw = tabwriter.NewWriter(out, 10, 1, 3, ' ', 0)
		w = tw
		var hb bytes.Buffer
		if err := tmpl.Execute(&hb, headers); err == nil {
			hb.WriteByte('\n')
			if _, err := w.Write(hb.Bytes()); err != nil {
				return err
			}
		}
	}
	for _, it := range items {
		var b bytes.Buffer
		if err := tmpl.Execute(&b, it); err != nil {
			return fmt.Errorf("template: %w", err)
		}
		b.WriteByte('\n')
		if _, err := w.Write(b.Bytes()); err != nil {
			return err
		}
	}
	if tw != nil {
		return tw.Flush()
	}
	return nil
}

// Execute runs a user template once on v and writes the result plus a
// newline; inspect/version/info use it for --format.
func Execute(out io.Writer, format string, v any) error {
	if strings.TrimSpace(format) == JSONDirective {
		format = "{{json .}}"
	}
	tmpl, err := Parse(format)
	if err != nil {
		return err
	}
	var b bytes.Buffer
	if err := tmpl.Execute(&b, v); err != nil {
		return fmt.Errorf("template: %w", err)
	}
	b.WriteByte('\n')
	_, err = out.Write(b.Bytes())
	return err
}
