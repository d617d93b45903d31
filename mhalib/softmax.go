package mhalib

import (
	. "github.com/gomlx/gomlx/pkg/core/graph"
)

// safeSoftmax is softmax over the last axis that gives an all-zero row (and zero gradient)
// instead of NaN when every logit of the row is −inf.
//
//	m = max_j logits_j (treated as a constant; 0 if it is −inf)
//	w_j = exp(logits_j − m) / Σ_j exp(logits_j − m)   (denominator 0 → row of zeros)
//
// Its gradient is the softmax backward in the fused form PyTorch uses, with g the gradient of
// w (both [..., L]):
//
//	∂logits = w ⊙ (g − Σ_j g_j w_j)
//
// and not the autodiff of exp, sum and divide, which evaluates the same value as
// e ⊙ (g/s − Σ_j g_j e_j/s²): two separately rounded terms of size |g| that cancel. In a sharp
// row (one weight ≈ 1) the exact ∂logits of that key is tiny, and the cancellation leaves
// several roundings of |g| in it; summed over the queries into the key projection's gradient,
// that made mhalib's float32 error up to ~10× PyTorch's (parity/README.md, "Why the key
// projection's gradient erred"). In the fused form g − Σ g w is one subtraction of nearly equal
// numbers, exact by Sterbenz's lemma, which leaves the single rounding of Σ g w.
//
// The forward values are those of the plain formula. The gradient reaches the logits through an
// identity t whose VJP is the fused form, added as t − t (exactly 0; blocked logits, −inf, are
// replaced by 0 on that path, where their weight and so their gradient is 0 anyway). The
// custom gradient belongs to these nodes only: nothing else in the graph or the process changes.
func safeSoftmax(logits *Node) *Node {
	w := softmaxValues(StopGradient(logits)) // [..., L]
	finite := Where(IsFinite(logits), logits, ZerosLike(logits))
	t := IdentityWithCustomGradient(finite, func(_, g *Node) *Node {
		return Mul(w, Sub(g, ReduceAndKeep(Mul(g, w), ReduceSum, -1))) // [..., L]
	})
	return Add(w, Sub(t, StopGradient(t))) // [..., L], = w
}

// softmaxValues computes safeSoftmax's values (its autodiff is not used).
func softmaxValues(logits *Node) *Node {
	e, s := softmaxParts(logits)
	return Div(e, s) // [..., L]
}

// softmaxParts is softmaxValues before its division: e = exp(logits − m) [..., L] and its sum
// s [..., 1] (0 → 1), so that a caller can divide a smaller product of e instead (e·v / s).
func softmaxParts(logits *Node) (e, s *Node) {
	m := ReduceAndKeep(logits, ReduceMax, -1)         // [..., 1]
	m = Where(IsFinite(m), m, ZerosLike(m))           // [..., 1]
	e = Exp(Sub(logits, m))                           // [..., L]
	s = ReduceAndKeep(e, ReduceSum, -1)               // [..., 1]
	s = Where(Equal(s, ZerosLike(s)), OnesLike(s), s) // [..., 1]
	return e, s
}

// safeSoftmaxFinite is safeSoftmax for the pure-Go backend, where every node is a pass of its
// own over the [..., Lq, Lk] scores (XLA fuses them): the gradient path t is an identity of
// raw, the logits before a mask blocked any pair (finite; [..., L] like logits), so the
// IsFinite, zeros and Where that make −inf logits finite are not computed. Its gradient equals
// safeSoftmax's when logits = raw where the weights are not 0 and the difference has no
// gradient: masks that only block pairs with the fill −inf (weight 0) or add a constant (ALiBi),
// not a finite fill (a fully blocked row then has weights), an additive mask that may itself be
// differentiated, or a soft-cap (sdpa.go checks).
func safeSoftmaxFinite(logits, raw *Node) *Node {
	w := softmaxValues(StopGradient(logits)) // [..., L]
	t := IdentityWithCustomGradient(raw, func(_, g *Node) *Node {
		return Mul(w, Sub(g, ReduceAndKeep(Mul(g, w), ReduceSum, -1))) // [..., L]
	})
	return Add(w, Sub(t, StopGradient(t))) // [..., L], = w
}

// softmaxSum is safeSoftmax(logits)·v for logits [B, Hq, Lq, Lk] and v [B, Hkv, Lk, dv] with
// the normalisation after the product, where it divides Lq·dv values instead of Lq·Lk:
//
//	m = max_j logits_j (a constant; 0 if it is −inf)   e = exp(logits − m)   s = Σ_j e_j (0 → 1)
//	output = (e·v) / s   [B, Hq, Lq, dv]
//
// On XLA the weights e/s are then never written to memory: a pass over the scores less to
// write and one less to read (seed003: [32, 8, 128, 128], 16 MiB each). On the pure-Go
// backend, where every node is a pass of its own, it also leaves out safeSoftmaxFinite's
// gradient path, which the forward pass computes too: its two identities of the scores (each a
// copy when the scores have other uses) and the t − t and w + … passes (fastgo's
// BenchmarkMHA/seed003, CPU time per pass, old and new test binaries alternated 3 times:
// 156–167 → 142–148 ms). Its gradient is safeSoftmax's fused form: with s a constant, autodiff gives e the gradient G = (g·vᵀ)/s,
// which the identity on e replaces by G − Σ_j G_j·w_j (w = e/s), and exp's own gradient then
// multiplies by e: ∂logits = w ⊙ (g·vᵀ − Σ_j (g·vᵀ)_j w_j), the one subtraction of nearly
// equal numbers, exact by Sterbenz's lemma (see safeSoftmax). A fully blocked row (every logit
// −inf) has e = 0: output 0, gradient 0.
func softmaxSum(logits, v *Node) *Node {
	m := StopGradient(ReduceAndKeep(logits, ReduceMax, -1)) // [B, Hq, Lq, 1]
	m = Where(IsFinite(m), m, ZerosLike(m))                 // [B, Hq, Lq, 1]
	e := Exp(Sub(logits, m))                                // [B, Hq, Lq, Lk]
	var s *Node                                             // [B, Hq, Lq, 1], below
	t := IdentityWithCustomGradient(e, func(e, g *Node) *Node {
		w := Div(e, s)                                         // [B, Hq, Lq, Lk]
		return Sub(g, ReduceAndKeep(Mul(g, w), ReduceSum, -1)) // [B, Hq, Lq, Lk]
	})
	// The product before the sum in the graph's order: fastgo then makes e inside the product
	// (fuse_expdot.go) and the sum takes the rows' sums it made.
	ev := groupedWeightedSum(t, v)                    // [B, Hq, Lq, dv]
	s = StopGradient(ReduceAndKeep(e, ReduceSum, -1)) // [B, Hq, Lq, 1]
	s = Where(Equal(s, ZerosLike(s)), OnesLike(s), s) // [B, Hq, Lq, 1]
	return Div(ev, s)                                 // [B, Hq, Lq, dv]
}
