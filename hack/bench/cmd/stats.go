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
	P90    float64   `json:"p90"`
	P95    float64   `json:"p95"`
	Max    float64   `json:"max"`
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
	s.P90 = sorted[nearestRank(0.90, n)]
	s.P95 = sorted[nearestRank(0.95, n)]
	s.Max = sorted[n-1]
	return s
}

// ratio is a/b, or NaN when either side is missing.
func ratio(a, b float64) float64 {
	if a <= 0 || b <= 0 || math.IsNaN(a) || math.IsNaN(b) {
		return math.NaN()
	}
	return a / b
}

// nearestRank is the index of the q quantile of n sorted values.
func nearestRank(q float64, n int) int {
	rank := int(math.Ceil(q*float64(n))) - 1
	if rank < 0 {
		rank = 0
	}
	return rank
}
