package bench

import "testing"

// TestBeside: a measured value printed next to a goal's limit is never rounded onto the limit
// (a row that read "250 GFLOP/s … missed" for 249.6, or "0.80× … missed" for 0.8004).
func TestBeside(t *testing.T) {
	for _, c := range []struct {
		v, limit float64
		decimals int
		want     string
	}{
		{249.6, 250, 0, "249.6"},
		{250.4, 250, 0, "250.4"}, // "250" would read as exactly the limit
		{191.2, 250, 0, "191"},
		{0.8004, 0.8, 2, "0.8004"},
		{0.7996, 0.8, 2, "0.7996"},
		{0.8, 0.8, 2, "0.80"},
		{0.97, 0.8, 2, "0.97"},
		{1.004, 1, 2, "1.004"},
		{0.996, 1, 2, "0.996"},
		{0.99999999, 1, 2, "0.99999999"},
	} {
		if got := beside(c.v, c.limit, c.decimals); got != c.want {
			t.Errorf("beside(%v, %v, %d) = %q, want %q", c.v, c.limit, c.decimals, got, c.want)
		}
	}
}

// TestGFLOPSGoalRow: the seed003 GFLOP/s row at 249.6 says 249.6, beside "missed".
func TestGFLOPSGoalRow(t *testing.T) {
	rep := &benchReport{MHA: []mhaResult{{mhaCase: mhaCase{Group: "seed003", B: 32, L: 128, E: 512, H: 8}, Backend: "xla:cpu", Impl: "mhalib plain", MedianMS: 38.9, GFLOPS: 249.6}}}
	for _, g := range evaluateGoals(rep) {
		if g.Goal == "xla:cpu seed003 ≥ 250 GFLOP/s" {
			if g.Met || g.Measured[:len("249.6 GFLOP/s")] != "249.6 GFLOP/s" {
				t.Fatalf("goal row %+v, want 249.6 GFLOP/s, not met", g)
			}
			return
		}
	}
	t.Fatal("no GFLOP/s goal row")
}
