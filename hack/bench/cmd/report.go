package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"regexp"
	"sort"
	"strings"
	"time"
)

// Report is the JSON file's content; the markdown table is made from it.
type Report struct {
	Date     string             `json:"date"`
	Mode     string             `json:"mode"`
	Host     map[string]string  `json:"host"`
	Engines  map[string]string  `json:"engines"` // name -> version
	Settings map[string]int     `json:"settings"`
	Settle   bool               `json:"settle"` // each timed sample waited for a quiet host
	Disk     *Stats             `json:"disk_write_mb_s,omitempty"`
	Results  []*Result          `json:"results"`
	Phases   map[string]Stats   `json:"our_debug_phases_ms,omitempty"`
	Elapsed  float64            `json:"elapsed_s"`
	Extra    map[string]float64 `json:"extra,omitempty"`
}

func fmtNum(v float64) string {
	switch {
	case math.IsNaN(v):
		return "n/a"
	case v >= 100:
		return fmt.Sprintf("%.0f", v)
	case v >= 10:
		return fmt.Sprintf("%.1f", v)
	default:
		return fmt.Sprintf("%.2f", v)
	}
}

// markdown renders the table: median (min–p95) per engine, and our ratio
// (ours ÷ peer, medians) to each peer.
func (r *Report) markdown(engines []string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# Benchmarks %s (%s)\n\n", r.Date, r.Mode)
	keys := make([]string, 0, len(r.Host))
	for k := range r.Host {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		fmt.Fprintf(&b, "- %s: %s\n", k, r.Host[k])
	}
	for _, e := range engines {
		fmt.Fprintf(&b, "- %s: %s\n", e, r.Engines[e])
	}
	if r.Disk != nil && r.Disk.N > 0 {
		fmt.Fprintf(&b, "- disk sequential write (dd 1000 MiB, O_DIRECT + fdatasync, same fs): median %s MB/s (min %s, p95 %s, n=%d)\n",
			fmtNum(r.Disk.Median), fmtNum(r.Disk.Min), fmtNum(r.Disk.P95), r.Disk.N)
	}
	fmt.Fprintf(&b, "- every container runs with --network none unless the row says otherwise; samples interleaved %s", strings.Join(engines, ", "))
	if r.Settle {
		b.WriteString("; each timed sample starts once the host has been quiet for 100 ms (at most 3 s)")
	}
	b.WriteString("\n\n")
	b.WriteString("Cells: median (min–p95) [n]. Ratio: ours ÷ peer on medians; for \"lower is better\" rows < 1 means we are faster.\n\n")
	b.WriteString("| figure | unit | better |")
	for _, e := range engines {
		fmt.Fprintf(&b, " %s |", e)
	}
	for _, e := range engines[1:] {
		fmt.Fprintf(&b, " ours/%s |", e)
	}
	b.WriteString("\n|---|---|---|")
	for range engines {
		b.WriteString("---|")
	}
	for range engines[1:] {
		b.WriteString("---|")
	}
	b.WriteString("\n")
	var notes []string
	for _, res := range r.Results {
		fmt.Fprintf(&b, "| %s | %s | %s |", res.Title, res.Unit, res.Better)
		for _, e := range engines {
			s, ok := res.Stats[e]
			switch {
			case ok && s.N > 0:
				fmt.Fprintf(&b, " %s (%s–%s) [%d] |", fmtNum(s.Median), fmtNum(s.Min), fmtNum(s.P95), s.N)
			case res.Errors[e] != "":
				notes = append(notes, fmt.Sprintf("%s / %s: %s", res.Title, e, oneLine(res.Errors[e])))
				fmt.Fprintf(&b, " n/a [%d] |", len(notes))
			default:
				b.WriteString(" – |")
			}
		}
		for _, e := range engines[1:] {
			if q, ok := res.Ratio[e]; ok {
				fmt.Fprintf(&b, " %.2f |", q)
			} else {
				b.WriteString(" – |")
			}
		}
		b.WriteString("\n")
		if res.Note != "" {
			notes = append(notes, res.Title+": "+res.Note)
		}
	}
	if len(notes) > 0 {
		b.WriteString("\nNotes:\n\n")
		for i, n := range notes {
			fmt.Fprintf(&b, "%d. %s\n", i+1, n)
		}
	}
	if len(r.Phases) > 0 {
		b.WriteString("\nOur engine's timed phases (dockerd -D log, `took=`), ms:\n\n| phase | n | min | median | p95 |\n|---|---|---|---|---|\n")
		names := make([]string, 0, len(r.Phases))
		for k := range r.Phases {
			names = append(names, k)
		}
		sort.Strings(names)
		for _, k := range names {
			s := r.Phases[k]
			fmt.Fprintf(&b, "| %s | %d | %s | %s | %s |\n", k, s.N, fmtNum(s.Min), fmtNum(s.Median), fmtNum(s.P95))
		}
	}
	fmt.Fprintf(&b, "\nWall time of the whole run: %.0f s\n", r.Elapsed)
	return b.String()
}

func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 300 {
		s = s[:300] + "…"
	}
	return s
}

var tookLine = regexp.MustCompile(`\bmsg=(?:"([^"]*)"|(\S+)).*\btook=(\S+)`)

// parsePhases gathers the durations our daemon logs at debug level with
// took=, grouped by message.
func parsePhases(path string) map[string]Stats {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	vals := map[string][]float64{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		m := tookLine.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		d, err := time.ParseDuration(m[3])
		if err != nil {
			continue
		}
		vals[m[1]+m[2]] = append(vals[m[1]+m[2]], ms(d))
	}
	out := map[string]Stats{}
	for k, v := range vals {
		s := summarise(v)
		s.Values = nil
		out[k] = s
	}
	return out
}

func writeJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}
