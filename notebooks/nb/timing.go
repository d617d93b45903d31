package nb

import (
	"fmt"
	"slices"
	"time"
)

// Times are the durations of repeated runs of the same work: enough to say how much they spread.
// Low and High are the quartiles: the middle half of the runs took between them (a machine
// shared with other work makes single runs slow now and then; the quartiles are what repeats).
type Times struct {
	Median, Min, Max, Low, High time.Duration
	Runs                        int
}

// Time calls fn once to warm up (compilation, first allocations), then runs times, and returns
// the median, the quartiles, the fastest and the slowest run.
func Time(runs int, fn func()) Times {
	fn()
	d := make([]time.Duration, runs)
	for i := range d {
		start := time.Now()
		fn()
		d[i] = time.Since(start)
	}
	return TimesOf(d)
}

// TimesOf summarises durations measured elsewhere (one per step of a loop, say): the median, the
// quartiles, the fastest and the slowest. It panics when there are none.
func TimesOf(durations []time.Duration) Times {
	if len(durations) == 0 {
		panic(fmt.Errorf("nb.TimesOf: no durations"))
	}
	d := slices.Sorted(slices.Values(durations))
	n := len(d)
	return Times{Median: d[n/2], Min: d[0], Max: d[n-1], Low: d[n/4], High: d[(3*n)/4], Runs: n}
}

// Ms returns the median in milliseconds.
func (t Times) Ms() float64 { return float64(t.Median) / float64(time.Millisecond) }

// String is "1.23 ms (1.10–1.50 ms, 9 runs)": the median, then the quartiles.
func (t Times) String() string {
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	return fmt.Sprintf("%.2f ms (%.2f–%.2f ms, %d runs)", ms(t.Median), ms(t.Low), ms(t.High), t.Runs)
}

// CompareTimes says how a compares with b in words a notebook may print: "2.1× slower than" or
// "faster (0.45× the time) than" only when the middle halves of their runs do not overlap
// (a's quartiles both above b's, or both below); otherwise "within the spread of" — the runs do
// not tell them apart.
func CompareTimes(a, b Times) string {
	ratio := float64(a.Median) / float64(b.Median)
	switch {
	case a.Low > b.High:
		return fmt.Sprintf("%.2f× slower than", ratio)
	case a.High < b.Low:
		return fmt.Sprintf("faster (%.2f× the time) than", ratio)
	}
	return fmt.Sprintf("within the spread (ratio of medians %.2f) of", ratio)
}
