package mhalib_test

import (
	"fmt"
	"strings"

	. "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/tensors"
	"github.com/gomlx/gomlx/pkg/ml/context"

	"github.com/mhalab/mhalab/mhalib"
)

// RoPE rotates pairs of features by an angle proportional to the position: with base 1 and one
// pair, the row at position p is the unit vector at angle p radians.
func ExampleRoPE() {
	x := [][][][]float64{{{{1, 0}, {1, 0}, {1, 0}}}} // [B=1, H=1, L=3, d=2], all (1, 0)
	y := MustExecOnce(goBackend(), func(x *Node) *Node {
		return mhalib.RoPE(x).Theta(1).Done() // positions 0, 1, 2 → angles 0, 1, 2 rad
	}, x)
	fmt.Printf("%.3f\n", tensors.MustCopyFlatData[float64](y))
	// Output:
	// [1.000 0.000 0.540 0.841 -0.416 0.909]
}

// The two conventions rotate different pairs: half-split pairs (0, 2) and (1, 3), interleaved
// pairs (0, 1) and (2, 3). Features past RotaryDims are left alone.
func ExampleRoPEBuilder_Convention() {
	x := [][][][]float64{{{{1, 0, 0, 0, 7}}}} // [1, 1, L=1, d=5]
	res := MustExecOnceN(goBackend(), func(x *Node) []*Node {
		half := mhalib.RoPE(x).Theta(1).RotaryDims(4).Offset(1).Done()
		inter := mhalib.RoPE(x).Theta(1).RotaryDims(4).Offset(1).Convention(mhalib.RoPEInterleaved).Done()
		return []*Node{half, inter}
	}, x)
	fmt.Printf("half        %.3f\ninterleaved %.3f\n", tensors.MustCopyFlatData[float64](res[0]), tensors.MustCopyFlatData[float64](res[1]))
	// Output:
	// half        [0.540 0.000 0.841 0.000 7.000]
	// interleaved [0.540 0.841 0.000 0.000 7.000]
}

// ALiBi's slopes: a geometric sequence for 8 heads, the paper's interleaving for 6.
func ExampleALiBiSlopes() {
	fmt.Printf("%.4g\n", mhalib.ALiBiSlopes(8))
	fmt.Printf("%.4g\n", mhalib.ALiBiSlopes(6))
	// Output:
	// [0.5 0.25 0.125 0.0625 0.03125 0.01562 0.007812 0.003906]
	// [0.25 0.0625 0.01562 0.003906 0.5 0.125]
}

// RMSNorm scales each vector to root-mean-square 1: (3, 4) has RMS √12.5.
func ExampleRMSNorm() {
	y := MustExecOnce(goBackend(), func(x *Node) *Node { return mhalib.RMSNorm(x, nil, 0) }, [][]float64{{3, 4}})
	fmt.Printf("%.4f\n", tensors.MustCopyFlatData[float64](y))
	// Output:
	// [0.8485 1.1314]
}

// MLA's explicit and absorbed forms give the same output from the same weights.
func ExampleMultiHeadLatentAttention() {
	cfg := mhalib.MLAConfig{Heads: 2, HeadDim: 4, RopeDim: 2, ValueDim: 4, Latent: 3}
	ctx := context.New()
	ctx.SetRNGStateFromSeed(1)
	x := [][][]float64{{{1, 0, 0, 0}, {0, 1, 0, 0}, {0, 0, 1, 1}}} // [B=1, L=3, E=4]
	exec := context.MustNewExec(goBackend(), ctx, func(ctx *context.Context, x *Node) []*Node {
		explicit := mhalib.MultiHeadLatentAttention(ctx, x, cfg).Causal(mhalib.CausalTopLeft).Done()
		absorbed := mhalib.MultiHeadLatentAttention(ctx.Reuse(), x, cfg).Causal(mhalib.CausalTopLeft).Absorbed(true).Done()
		return []*Node{ReduceAllMax(Abs(Sub(explicit, absorbed)))}
	})
	diff := exec.MustExec(x)[0]
	fmt.Println("max |explicit − absorbed| < 1e-12:", tensors.ToScalar[float64](diff) < 1e-12)
	// Output:
	// max |explicit − absorbed| < 1e-12: true
}

// The tiles FlashAttention computes for 8 causal queries in blocks of 4 rows × 2 keys, without
// and with a window of the last 3 keys (Window(2, 0)): with the window, the second query block
// (rows 4–7, whose windows start at key 2) never meets keys 0–1.
func ExampleFlashTiles() {
	for _, w := range []*mhalib.Window{nil, {Left: 2, Align: mhalib.AlignTopLeft}} {
		tiles, _ := mhalib.FlashTiles(8, 8, 4, 2, mhalib.CausalTopLeft, w)
		var parts []string
		for _, t := range tiles {
			parts = append(parts, fmt.Sprintf("rows %d–%d × keys %d–%d", t.Row0, t.Row1-1, t.Col0, t.Col1-1))
		}
		fmt.Println(strings.Join(parts, ", "))
	}
	// Output:
	// rows 0–7 × keys 0–1, rows 0–7 × keys 2–3, rows 4–7 × keys 4–5, rows 4–7 × keys 6–7
	// rows 0–3 × keys 0–1, rows 0–7 × keys 2–3, rows 4–7 × keys 4–5, rows 4–7 × keys 6–7
}
