package parity

import (
	"math"
	"math/rand/v2"
	"testing"
)

// DotBound and CosineBound hold for float32 evaluations of random vectors with perturbed
// operands, and are not loose by orders of magnitude. Seed fixed (PCG 1, 2).
func TestDotAndCosineBoundsHold(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	worstDot, worstCos := 0.0, 0.0
	for trial := range 200 {
		n := 1 + rng.IntN(1000)
		a, b := make([]float64, n), make([]float64, n)
		ea, eb := make([]float64, n), make([]float64, n)
		pa, pb := make([]float32, n), make([]float32, n)
		for i := range n {
			a[i], b[i] = rng.NormFloat64(), rng.NormFloat64()
			ea[i], eb[i] = 1e-6*rng.Float64(), 1e-6*rng.Float64()
			// the operands as they arrive, erring by up to ea, eb
			pa[i] = float32(a[i] + ea[i]*(2*rng.Float64()-1))
			pb[i] = float32(b[i] + eb[i]*(2*rng.Float64()-1))
			ea[i] += U * math.Abs(a[i]) * 2 // the float32 rounding of the perturbed value
			eb[i] += U * math.Abs(b[i]) * 2
		}
		var dot, aa, bb float32
		var exact, eaa, ebb float64
		for i := range n {
			dot += pa[i] * pb[i]
			aa += pa[i] * pa[i]
			bb += pb[i] * pb[i]
			exact, eaa, ebb = exact+a[i]*b[i], eaa+a[i]*a[i], ebb+b[i]*b[i]
		}
		if d, bound := math.Abs(float64(dot)-exact), DotBound(a, b, ea, eb); d > bound {
			t.Fatalf("trial %d (n %d): dot product error %.3g > bound %.3g", trial, n, d, bound)
		} else {
			worstDot = max(worstDot, d/bound)
		}
		cos32 := float64(dot / float32(math.Sqrt(float64(aa))) / float32(math.Sqrt(float64(bb))))
		cos := exact / math.Sqrt(eaa*ebb)
		if d, bound := math.Abs(cos32-cos), CosineBound(a, b, ea, eb); d > bound {
			t.Fatalf("trial %d (n %d): cosine error %.3g > bound %.3g", trial, n, d, bound)
		} else {
			worstCos = max(worstCos, d/bound)
		}
	}
	t.Logf("largest err/bound: dot %.3g, cosine %.3g", worstDot, worstCos)
	if worstDot < 1e-3 || worstCos < 1e-3 {
		t.Errorf("bounds looser than 1000× the largest error seen (dot %.3g, cosine %.3g)", worstDot, worstCos)
	}
}
