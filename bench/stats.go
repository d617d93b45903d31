package bench

import (
	"fmt"
	"slices"
	"time"
)

// number is what Median takes: float64 milliseconds, time.Duration, ….
type number interface {
	~int | ~int32 | ~int64 | ~float32 | ~float64
}

// Median returns the median of xs (not modified; the mean of the two middle values when their
// number is even); 0 for none. For durations the mean is rounded down to a nanosecond.
func Median[T number](xs []T) T {
	var zero T
	n := len(xs)
	if n == 0 {
		return zero
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// FormatDuration formats d with 3 significant digits: "8.21 ms", "118 ms", "2.41 s".
func FormatDuration(d time.Duration) string {
	return FormatMS(float64(d) / float64(time.Millisecond))
}

// FormatMS formats v milliseconds with 3 significant digits: "8.21 ms", "118 ms", "2.41 s".
func FormatMS(v float64) string {
	switch {
	case v >= 1000:
		return fmt.Sprintf("%.3g s", v/1000)
	case v >= 100:
		return fmt.Sprintf("%.0f ms", v)
	case v >= 10:
		return fmt.Sprintf("%.1f ms", v)
	}
	return fmt.Sprintf("%.2f ms", v)
}

// FormatTimes formats a speed-up: two significant digits below 10 ("0.66×", "4.5×"), whole
// numbers above ("12×"). A slow-down shows as below 1, never rounded up to "1×".
func FormatTimes(x float64) string {
	if x >= 9.95 {
		return fmt.Sprintf("%.0f×", x)
	}
	return fmt.Sprintf("%.2g×", x)
}

func msSince(t time.Time) float64 { return float64(time.Since(t)) / float64(time.Millisecond) }
