package fastgo

import "testing"

// VecLoop is vecLoop (gemv_vec_test.go) for the benchmarks of package fastgo_test.
func VecLoop(b *testing.B, body func(i int)) { vecLoop(b, body) }

// VecModes names the vector modes this CPU runs, best first ("avx512", "avx2", "go").
func VecModes() []string {
	var names []string
	for _, m := range vecModes() {
		names = append(names, m.name)
	}
	return names
}

// WithVecMode runs the rest of tb in the vector mode called name (one of VecModes; restored by
// tb.Cleanup).
func WithVecMode(tb testing.TB, name string) {
	tb.Helper()
	m, ok := vecModeNamed(name)
	if !ok {
		tb.Fatalf("vector mode %q: not one this CPU runs (%v)", name, VecModes())
	}
	withVecMode(tb, m)
}

// HasGroupRows reports whether groupRows has kernels in the current vector mode.
func HasGroupRows() bool { return hasGroupRows() }
