package mhalib

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/gomlx/gomlx/pkg/core/dtypes"
	. "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/shapes"
	"github.com/gomlx/gomlx/pkg/core/tensors"

	"github.com/mhalab/mhalab/internal/backendtest"
)

// TestCausalPartialRows checks how many leading rows of a tile see only part of its key block
// under the causal mask: top-left and bottom-right, tiles on, above and below the diagonal,
// and keys past causalLk (add_bias_kv / add_zero_attn), which every row sees.
func TestCausalPartialRows(t *testing.T) {
	for _, c := range []struct {
		name                 string
		ms                   maskSet
		row0, rows, c0, cols int
		want                 int
	}{
		{"top-left, first block", maskSet{lq: 16, lk: 16, causalLk: 16, causal: CausalTopLeft}, 0, 16, 0, 4, 3},
		{"top-left, later block", maskSet{lq: 16, lk: 16, causalLk: 16, causal: CausalTopLeft}, 4, 12, 8, 4, 7},
		{"top-left, below the diagonal", maskSet{lq: 16, lk: 16, causalLk: 16, causal: CausalTopLeft}, 8, 8, 0, 4, 0},
		{"top-left, every row partial", maskSet{lq: 16, lk: 16, causalLk: 16, causal: CausalTopLeft}, 0, 4, 8, 4, 4},
		{"bottom-right, Lq < Lk", maskSet{lq: 4, lk: 16, causalLk: 16, causal: CausalBottomRight}, 0, 4, 12, 4, 3},
		{"bottom-right, Lq > Lk", maskSet{lq: 16, lk: 8, causalLk: 8, causal: CausalBottomRight}, 0, 16, 4, 4, 15},
		{"extra keys only", maskSet{lq: 8, lk: 10, causalLk: 8, causal: CausalTopLeft}, 0, 8, 8, 2, 0},
		{"extra keys and causal keys", maskSet{lq: 8, lk: 10, causalLk: 8, causal: CausalTopLeft}, 0, 8, 6, 4, 7},
	} {
		if got := causalPartialRows(&c.ms, c.row0, c.rows, c.c0, c.cols); got != c.want {
			t.Errorf("%s: causalPartialRows(rows [%d, %d), keys [%d, %d)) = %d, want %d",
				c.name, c.row0, c.row0+c.rows, c.c0, c.c0+c.cols, got, c.want)
		}
	}
}

// TestFlashTileMaxEqualsMaskedMax checks on XLA that flashTileMax, which masks only the rows
// that cross the diagonal, gives exactly the row maxima of the whole masked tile, including a
// fully blocked row (−inf), bottom-right alignment and keys past causalLk.
func TestFlashTileMaxEqualsMaskedMax(t *testing.T) {
	backend, err := backendtest.Get("xla:cpu")
	if err != nil {
		t.Skipf("xla:cpu: %v", err)
	}
	rng := rand.New(rand.NewPCG(29, 1))
	for _, c := range []struct {
		name                 string
		ms                   maskSet
		row0, rows, c0, cols int
	}{
		{"top-left", maskSet{lq: 16, lk: 16, causalLk: 16, causal: CausalTopLeft}, 4, 12, 4, 4},
		{"top-left, blocked first row", maskSet{lq: 16, lk: 16, causalLk: 16, causal: CausalTopLeft}, 4, 12, 5, 4},
		{"bottom-right", maskSet{lq: 12, lk: 16, causalLk: 16, causal: CausalBottomRight}, 0, 12, 4, 4},
		{"extra keys", maskSet{lq: 20, lk: 10, causalLk: 8, causal: CausalTopLeft}, 0, 20, 4, 6},
	} {
		c.ms.batch, c.ms.heads, c.ms.fill = 2, 3, math.Inf(-1)
		if n := causalPartialRows(&c.ms, c.row0, c.rows, c.c0, c.cols); n == 0 || n > c.rows/2 {
			t.Fatalf("%s: %d partial rows of %d: the case does not take the split path", c.name, n, c.rows)
		}
		data := make([]float64, 2*3*c.rows*c.cols)
		for i := range data {
			data[i] = rng.NormFloat64() * 4
		}
		raw := tensors.FromFlatDataAndDimensions(data, 2, 3, c.rows, c.cols)
		exec, err := NewExec(backend, func(s *Node) (split, whole *Node) {
			masked := c.ms.apply(s, c.row0, c.c0)
			return flashTileMax(s, masked, &c.ms, c.row0, c.c0), ReduceAndKeep(masked, ReduceMax, -1)
		})
		if err != nil {
			t.Fatal(err)
		}
		out, err := exec.Exec(raw)
		if err != nil {
			t.Fatal(err)
		}
		split, err := tensors.CopyFlatData[float64](out[0])
		if err != nil {
			t.Fatal(err)
		}
		whole, err := tensors.CopyFlatData[float64](out[1])
		if err != nil {
			t.Fatal(err)
		}
		if !shapes.Make(dtypes.Float64, 2, 3, c.rows, 1).Equal(out[0].Shape()) {
			t.Fatalf("%s: shape %s, want [2, 3, %d, 1]", c.name, out[0].Shape(), c.rows)
		}
		for i := range whole {
			if split[i] != whole[i] {
				t.Errorf("%s: row max %d = %g, want %g", c.name, i, split[i], whole[i])
			}
		}
		exec.Finalize()
	}
}

// TestFlashChainCount: FlashAttention on XLA runs as many chains as the largest divisor of the
// key/value heads up to 4, fewer when the chains' unrolled steps together would pass 256.
func TestFlashChainCount(t *testing.T) {
	for _, c := range []struct{ hkv, steps, want int }{
		{8, 32, 4}, {8, 64, 4}, {4, 64, 4}, {6, 64, 3}, {12, 8, 4}, {2, 32, 2}, {1, 8, 1}, {5, 64, 1}, {7, 8, 1},
		{8, 128, 2}, {8, 256, 1}, {8, 1024, 1}, {3, 100, 1}, {4, 86, 2}, {8, 0, 4},
	} {
		if got := flashChainCount(c.hkv, c.steps); got != c.want {
			t.Errorf("flashChainCount(hkv %d, steps %d) = %d, want %d", c.hkv, c.steps, got, c.want)
		}
	}
}
