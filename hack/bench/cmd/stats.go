package main

import (
	"math"
	"sort"
)

// Stats summarises repeated samples of one figure.
type Stats struct {
	N      int       `json:"n"`
	Min    float64   `json:"min"`
	Median float64   `json:"median"`
	P95    float64   `json:"p95"`
	Values []float64 `json:"samples"`
}

// summarise computes min, median and p95 (nearest rank, so with few samples
// p95 is simply the largest one rather than an interpolated guess).
func summarise(v []float64) Stats {
	s := Stats{N: len(v), Values: append([]float64(nil), v...)}
	if len(v) == 0 {
		return s
	}
	sorted := append([]float64(nil), v...)
	sort.Float64s(sorted)
	s.Min = sorted[0]
	n := len(sorted)
	if n%2 == 1 {
		s.Median = sorted[n/2]
	} else {
		s.Median = (sorted[n/2-1] + sorted[n/2]) / 2
	}
	rank := int(math.Ceil(0.95*float64(n))) - 1
	if rank < 0 {
		rank = 0
	}
	s.P95 = sorted[rank]
	return s
}

// ratio is a/b, or NaN when either side is missing.
func ratio(a, b float64) float64 {
	if a <= 0 || b <= 0 || math.IsNaN(a) || math.IsNaN(b) {
		return math.NaN()
	}
	return a / b
}
