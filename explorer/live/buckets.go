package live

// bucket returns the length to pad n tokens to: the smallest of 16, 32, 64, … that holds n,
// at most limit (then n itself when n > limit).
func bucket(n, limit int) int {
	b := 16
	for b < n {
		b *= 2
	}
	return max(n, min(b, limit))
}

// chunks splits n into powers of two, largest first (37 → 32, 4, 1): feeding a prompt to a KV
// cache in these pieces compiles at most one program per power of two.
func chunks(n int) []int {
	var out []int
	for p := 1 << 30; p > 0; p >>= 1 {
		if n >= p {
			out = append(out, p)
			n -= p
		}
	}
	return out
}
