package main

import (
	"log/slog"
	"sort"
)

// Result is one figure measured on every engine that supports it.
type Result struct {
	Key    string             `json:"key"`
	Title  string             `json:"title"`
	Unit   string             `json:"unit"`
	Better string             `json:"better"` // "lower" or "higher"
	Stats  map[string]Stats   `json:"engines"`
	Ratio  map[string]float64 `json:"our_ratio,omitempty"` // ours/peer of medians
	Errors map[string]string  `json:"errors,omitempty"`
	Note   string             `json:"note,omitempty"`

	samples map[string][]float64
	order   int
}

// Results collects samples in the order the figures were first defined.
type Results struct {
	byKey map[string]*Result
}

func newResults() *Results { return &Results{byKey: map[string]*Result{}} }

// define declares a figure; later calls with the same key are no-ops.
func (rs *Results) define(key, title, unit, better, note string) {
	if _, ok := rs.byKey[key]; ok {
		return
	}
	rs.byKey[key] = &Result{Key: key, Title: title, Unit: unit, Better: better, Note: note,
		samples: map[string][]float64{}, Errors: map[string]string{}, order: len(rs.byKey)}
}

func (rs *Results) add(key, engine string, v float64) {
	rs.byKey[key].samples[engine] = append(rs.byKey[key].samples[engine], v)
}

// fail records the first error an engine gave for a figure; the run goes on.
func (rs *Results) fail(key, engine string, err error) {
	slog.Warn("measurement failed", "figure", key, "engine", engine, "err", err)
	r := rs.byKey[key]
	if _, ok := r.Errors[engine]; !ok {
		r.Errors[engine] = err.Error()
	}
}

// note sets a per-figure remark (e.g. why an engine has no figure).
func (rs *Results) note(key, engine, msg string) {
	r := rs.byKey[key]
	if _, ok := r.Errors[engine]; !ok {
		r.Errors[engine] = msg
	}
}

// finish computes the statistics and our ratio to each peer.
func (rs *Results) finish(engines []string) []*Result {
	var out []*Result
	for _, r := range rs.byKey {
		r.Stats = map[string]Stats{}
		for e, v := range r.samples {
			r.Stats[e] = summarise(v)
		}
		r.Ratio = map[string]float64{}
		ours, ok := r.Stats["ours"]
		for _, peer := range engines {
			if peer == "ours" {
				continue
			}
			p, pok := r.Stats[peer]
			if ok && pok {
				if q := ratio(ours.Median, p.Median); q == q { // not NaN
					r.Ratio[peer] = q
				}
			}
		}
		if len(r.Errors) == 0 {
			r.Errors = nil
		}
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].order < out[j].order })
	return out
}
