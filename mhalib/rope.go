package mhalib

import (
	"math"

	"github.com/gomlx/gomlx/pkg/core/dtypes"
	. "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/shapes"
)

// Rotary position embedding (RoPE, Su et al. 2021, "RoFormer: Enhanced Transformer with Rotary
// Position Embedding"), as Llama, Qwen, Gemma, SmolLM2 and DeepSeek use it.
//
// Instead of adding a position vector to the token, RoPE rotates q and k. The first rd features
// of a head are taken in pairs; pair k of the row at position p is rotated by the angle
//
//	θ_k(p) = p · base^(−2k/rd),   k = 0 … rd/2 − 1
//
//	(x_a, x_b) → (x_a·cos θ − x_b·sin θ,  x_b·cos θ + x_a·sin θ)
//
// Because a rotation by p·ω followed by the transpose of a rotation by p'·ω is a rotation by
// (p − p')·ω, the score q_p·k_p' depends on the positions only through p − p'.
//
// Two conventions pair the features differently (the same model weights, permuted, give the
// same scores under either):
//
//	RoPEHalfSplit   (GPT-NeoX, Hugging Face rotate_half): pair (k, k + rd/2)
//	RoPEInterleaved (GPT-J, GGUF / llama.cpp):            pair (2k, 2k + 1)
//
// Features from rd on pass unchanged (partial rotary). The graph computes
//
//	out = x ⊙ cos + (x·R) ⊙ sin        x [B, H, L, d], cos, sin [L, d], R [d, d]
//
// where R is the constant matrix that swaps each pair with a sign (x·R is rotate_half for the
// half-split convention), and cos/sin hold cos θ and sin θ of each feature's pair (1 and 0 past
// rd). The angles are computed in float64 and then converted to x's dtype, so long positions
// lose no precision to float32 angles. No Slice or Concatenate: gradients work on every backend.

// RoPEConvention says which features RoPE rotates together.
type RoPEConvention int

const (
	// RoPEHalfSplit pairs feature k with k + rd/2 (GPT-NeoX, Hugging Face rotate_half).
	RoPEHalfSplit RoPEConvention = iota
	// RoPEInterleaved pairs feature 2k with 2k + 1 (GPT-J, GGUF / llama.cpp).
	RoPEInterleaved
)

// String returns "half" or "interleaved" (the names of `mhalab sdpa --rope`).
func (c RoPEConvention) String() string {
	if c == RoPEInterleaved {
		return "interleaved"
	}
	return "half"
}

// DefaultRoPETheta is the base of RoFormer and Llama 2; Llama 3 uses 500 000, SmolLM2 100 000.
const DefaultRoPETheta = 10000

// RoPEBuilder configures RoPE; finish it with Done.
type RoPEBuilder struct {
	x          *Node
	theta      float64
	rotaryDims int
	convention RoPEConvention
	offset     int
	pos        *Node
}

// RoPE starts rotating x [B, H, L, d] (heads already split): row l sits at position offset + l.
// Finish with Done, which returns the rotated x, same shape.
func RoPE(x *Node) *RoPEBuilder {
	return &RoPEBuilder{x: x, theta: DefaultRoPETheta}
}

// Theta sets the base of the frequencies. Default DefaultRoPETheta (10 000).
func (b *RoPEBuilder) Theta(theta float64) *RoPEBuilder {
	b.theta = theta
	return b
}

// RotaryDims sets how many leading features are rotated (an even number ≤ d); the rest pass
// unchanged. Default 0: all d features.
func (b *RoPEBuilder) RotaryDims(n int) *RoPEBuilder {
	b.rotaryDims = n
	return b
}

// Convention sets the pairing of features. Default RoPEHalfSplit.
func (b *RoPEBuilder) Convention(c RoPEConvention) *RoPEBuilder {
	b.convention = c
	return b
}

// Offset sets the position of row 0, a constant. Default 0.
func (b *RoPEBuilder) Offset(p int) *RoPEBuilder {
	b.offset = p
	return b
}

// Position sets the position of row 0 as a scalar int32 node (a decoding step's position in
// the KV cache; one compiled graph then serves every step). It adds to Offset. Default: none.
func (b *RoPEBuilder) Position(pos *Node) *RoPEBuilder {
	b.pos = pos
	return b
}

// Done builds the rotation and returns x rotated, [B, H, L, d].
// It panics with an *ArgumentError for a bad shape or option.
func (b *RoPEBuilder) Done() *Node {
	x := b.x
	if x == nil {
		panicArg("x", "is nil")
	}
	if x.Rank() != 4 || !x.DType().IsFloat() {
		panicArg("x", "shape %s: RoPE wants a float [batch, heads, length, headDim]", x.Shape())
	}
	L, d := x.Shape().Dim(2), x.Shape().Dim(3)
	rd := b.rotaryDims
	if rd == 0 {
		rd = d
	}
	if rd < 0 || rd > d || rd%2 != 0 {
		panicArg("RotaryDims", "%d for x shape %s: want an even number of features ≤ headDim %d", rd, x.Shape(), d)
	}
	if !(b.theta > 0) || math.IsInf(b.theta, 0) {
		panicArg("Theta", "%g: want a positive base", b.theta)
	}
	if b.pos != nil && (!b.pos.IsScalar() || b.pos.DType() != dtypes.Int32) {
		panicArg("Position", "shape %s: want a scalar int32 node", b.pos.Shape())
	}
	g := x.Graph()
	freq, rot := ropeConstants(d, rd, b.theta, b.convention)
	// Positions of the rows, in float64: [L, 1].
	p := Iota(g, shapes.Make(dtypes.Int32, L, 1), 0) // [L, 1]
	p = AddScalar(p, float64(b.offset))
	if b.pos != nil {
		p = Add(p, b.pos)
	}
	angles := Mul(ConvertDType(p, dtypes.Float64), Const(g, [][]float64{freq})) // [L, d]
	cos := Reshape(ConvertDType(Cos(angles), x.DType()), 1, 1, L, d)            // [1, 1, L, d]
	sin := Reshape(ConvertDType(Sin(angles), x.DType()), 1, 1, L, d)            // [1, 1, L, d]
	R := ConvertDType(Const(g, rot), x.DType())                                 // [d, d]
	xr := DotGeneral(x, []int{3}, nil, R, []int{0}, nil)                        // [B, H, L, d]: pairs swapped with a sign
	return Add(Mul(x, cos), Mul(xr, sin))                                       // [B, H, L, d]
}

// ropeConstants returns, for d features of which rd are rotated:
// freq[e] = base^(−2k/rd) for feature e of pair k (0 past rd), and R [d, d] with
// (x·R)_a = −x_b, (x·R)_b = x_a for every pair (a, b).
func ropeConstants(d, rd int, theta float64, c RoPEConvention) (freq []float64, rot [][]float64) {
	freq = make([]float64, d)
	rot = make([][]float64, d)
	for i := range rot {
		rot[i] = make([]float64, d)
	}
	for k := 0; k < rd/2; k++ {
		a, bb := k, k+rd/2
		if c == RoPEInterleaved {
			a, bb = 2*k, 2*k+1
		}
		f := math.Pow(theta, -2*float64(k)/float64(rd))
		freq[a], freq[bb] = f, f
		rot[bb][a] = -1 // (x·R)_a = −x_b
		rot[a][bb] = 1  // (x·R)_b = x_a
	}
	return freq, rot
}
