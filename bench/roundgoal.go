package bench

import "strconv"

// beside formats v, a measurement shown next to a goal's limit, with the given decimals, or
// with as many more (up to 8) as it takes for the printed number to fall on the same side of
// the limit as v itself: 249.6 against 250 prints "249.6", not "250", and 0.8004 against 0.8
// prints "0.8004", not "0.80", so that a row never reads as if it met a limit it missed (or
// the reverse).
func beside(v, limit float64, decimals int) string {
	for d := decimals; ; d++ {
		s := strconv.FormatFloat(v, 'f', d, 64)
		r, err := strconv.ParseFloat(s, 64)
		if d >= decimals+8 || err != nil || ((r < limit) == (v < limit) && (r > limit) == (v > limit)) {
			return s
		}
	}
}
