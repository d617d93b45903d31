package mhalib

import (
	"math"

	"github.com/gomlx/gomlx/pkg/core/dtypes"
	. "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/shapes"
	"github.com/gomlx/gomlx/pkg/ml/context"
)

// Scaled dot-product attention, "Attention Is All You Need" §3.2.1:
//
//	Attention(Q, K, V) = softmax(Q·Kᵀ / √d_k) · V
//
// computed for every (batch, head) pair at once:
//
//	q [B, h, Lq, dk] · k [B, h, Lk, dk]ᵀ → logits [B, h, Lq, Lk] → softmax over Lk → · v [B, h, Lk, dv] → [B, h, Lq, dv]

// SDPABuilder configures ScaledDotProductAttention; finish it with Done or DoneWithWeights. Its
// options are AttentionOptions' (shared with FlashAttention and MultiHeadAttention) and
// EnableGQA.
type SDPABuilder struct {
	AttentionOptions[*SDPABuilder]
	GQAOption[*SDPABuilder]
	q, k, v *Node
}

// ScaledDotProductAttention starts building softmax(q·kᵀ·scale + mask)·v.
//
//	q: [B, h, Lq, dk]   k: [B, h, Lk, dk]   v: [B, h, Lk, dv]
//
// Finish with Done (output [B, h, Lq, dv]) or DoneWithWeights (also the weights [B, h, Lq, Lk]).
func ScaledDotProductAttention(q, k, v *Node) *SDPABuilder {
	b := &SDPABuilder{q: q, k: k, v: v}
	b.AttentionOptions = newAttentionOptions(b)
	b.GQAOption = GQAOption[*SDPABuilder]{builder: b, on: &b.cfg.gqa}
	return b
}

// Graph returns the graph of q, for building mask constants.
func (b *SDPABuilder) Graph() *Graph { return b.q.Graph() }

// Done builds the attention and returns the output [B, h, Lq, dv].
// It panics with an *ArgumentError for inconsistent shapes or dtypes (Exec returns it as an error).
func (b *SDPABuilder) Done() *Node {
	out, _ := b.build(false)
	return out
}

// DoneWithWeights builds the attention and returns
//
//	output:  [B, h, Lq, dv]
//	weights: [B, h, Lq, Lk] (after dropout, as PyTorch returns them; rows sum to 1 or are all 0)
//
// It panics with an *ArgumentError for inconsistent shapes or dtypes (Exec returns it as an error).
func (b *SDPABuilder) DoneWithWeights() (output, weights *Node) {
	return b.build(true)
}

// build is Done (withWeights false: the weights are not formed where the backend fuses the
// normalisation into the output, softmax.go) and DoneWithWeights.
func (b *SDPABuilder) build(withWeights bool) (output, weights *Node) {
	ms, scale := b.cfg.prepare(b.q, b.k, b.v)
	return attendWith(b.q, b.k, b.v, []float64{scale}, ms, b.cfg.dropout, withWeights)
}

// checkSDPAInputs validates q [B, Hq, Lq, dk], k [B, Hkv, Lk, dk], v [B, Hkv, Lk, dv], with
// Hkv = Hq unless gqa (then Hq must be a multiple of Hkv), and returns B, Hq, Lq, Lk.
func checkSDPAInputs(q, k, v *Node, gqa bool) (batch, heads, lq, lk int) {
	for _, x := range []struct {
		name string
		n    *Node
	}{{"q", q}, {"k", k}, {"v", v}} {
		if x.n == nil {
			panicArg(x.name, "is nil")
		}
		if x.n.Rank() != 4 {
			panicArg(x.name, "shape %s: want rank 4 [batch, heads, length, headDim]", x.n.Shape())
		}
	}
	if !q.DType().IsFloat() {
		panicArg("q", "shape %s: want a float dtype", q.Shape())
	}
	if k.DType() != q.DType() || v.DType() != q.DType() {
		panicArg("k/v", "dtype mismatch: q %s, k %s, v %s", q.Shape(), k.Shape(), v.Shape())
	}
	qd, kd, vd := q.Shape().Dimensions, k.Shape().Dimensions, v.Shape().Dimensions
	if gqa && kd[1] != qd[1] && (kd[1] == 0 || qd[1]%kd[1] != 0) {
		panicArg("k", "shape %s: %d key/value heads do not divide the %d query heads of q shape %s (grouped-query attention needs Hq %% Hkv == 0)",
			k.Shape(), kd[1], qd[1], q.Shape())
	}
	if !gqa && kd[1] != qd[1] {
		panicArg("k", "shape %s has %d heads, q shape %s has %d: use EnableGQA(true) for grouped-query attention", k.Shape(), kd[1], q.Shape(), qd[1])
	}
	if kd[0] != qd[0] || kd[3] != qd[3] {
		panicArg("k", "shape %s does not match q shape %s: want [B=%d, h=%d, Lk, dk=%d]", k.Shape(), q.Shape(), qd[0], kd[1], qd[3])
	}
	if vd[0] != qd[0] || vd[1] != kd[1] || vd[2] != kd[2] {
		panicArg("v", "shape %s does not match k shape %s: want [B=%d, h=%d, Lk=%d, dv]", v.Shape(), k.Shape(), qd[0], kd[1], kd[2])
	}
	if qd[2] == 0 {
		panicArg("q", "shape %s: %s", q.Shape(), noQueries)
	}
	if kd[2] == 0 {
		panicArg("k", "shape %s: %s", k.Shape(), noKeys)
	}
	return qd[0], qd[1], qd[2], kd[2]
}

// dropoutSpec is the attention-weight dropout: applied only when ctx is training.
type dropoutSpec struct {
	ctx  *context.Context
	rate float64
}

// active reports whether apply changes the weights in graph g (a rate > 0 while training).
func (d dropoutSpec) active(g *Graph) bool {
	return d.ctx != nil && d.rate > 0 && d.ctx.IsTraining(g)
}

// apply drops entries of w with probability rate and scales the rest by 1/(1−rate).
func (d dropoutSpec) apply(w *Node) *Node {
	if !d.active(w.Graph()) {
		return w
	}
	if d.rate >= 1 {
		return ZerosLike(w)
	}
	u := d.ctx.RandomUniform(w.Graph(), shapes.Make(w.DType(), w.Shape().Dimensions...)) // U[0,1), w's shape
	keep := GreaterOrEqual(u, Scalar(w.Graph(), w.DType(), d.rate))
	return Where(keep, MulScalar(w, 1/(1-d.rate)), ZerosLike(w))
}

// attend is the textbook computation shared by every formulation:
//
//	logits  = q·kᵀ · scale           [B, h, Lq, Lk]
//	logits  = masks(logits)          additive masks added, blocked pairs set to the fill value
//	weights = softmax(logits)        over Lk; a fully blocked row gives zeros
//	weights = dropout(weights)       training only
//	output  = weights · v            [B, h, Lq, dv]
//
// scales holds one factor for all heads, or one per head (uneven heads padded to a common size).
func attend(q, k, v *Node, scales []float64, ms *maskSet, drop dropoutSpec) (output, weights *Node) {
	return attendWith(q, k, v, scales, ms, drop, true)
}

// attendWith is attend; withWeights false lets it skip forming the weights (then nil) where
// that is faster (softmaxAndSum).
func attendWith(q, k, v *Node, scales []float64, ms *maskSet, drop dropoutSpec, withWeights bool) (output, weights *Node) {
	return attendHeads(headMajor(q), headMajor(k), v, scales, ms, drop, withWeights)
}

// attendHeads is attendWith for q and k in either layout (seqmajor.go), v [B, Hkv, Lk, dv].
func attendHeads(q, k headsOperand, v *Node, scales []float64, ms *maskSet, drop dropoutSpec, withWeights bool) (output, weights *Node) {
	// Refuse up front a graph whose scores cannot fit in memory (memory.go).
	checkPlainAttentionMemory(q.node.Shape().Dim(0), q.heads(), q.length(), k.length(), q.node.DType())
	// 1) Scores: every query against every key, in every (batch, head), scaled; with GQA each
	// group of Hq/Hkv query heads against its key head (gqa.go).
	if len(scales) == 1 && exactScale(scales[0], q.node.DType()) {
		// Scaling q instead of the scores gives the same logits bit for bit (a power of two
		// multiplies exactly) and scales dk numbers per query instead of Lk: XLA no longer
		// writes the scaled scores to memory as a pass of its own.
		logits := headsScores(q.scaled(scales[0]), k) // [B, h, Lq, Lk]
		return softmaxAndSum(logits, v, ms, drop, withWeights)
	}
	logits := headsScores(q, k) // [B, h, Lq, Lk]
	if len(scales) == 1 {
		logits = MulScalar(logits, scales[0])
	} else {
		perHead := Reshape(Const(logits.Graph(), scales), 1, len(scales), 1, 1) // [1, h, 1, 1]
		logits = Mul(logits, ConvertDType(perHead, logits.DType()))             // [B, h, Lq, Lk]
	}
	return softmaxAndSum(logits, v, ms, drop, withWeights)
}

// exactScale reports whether multiplying by s is exact in dtype: s is a power of two and the
// dtype float32 or float64 (whose exponent range leaves every scaled attention input normal).
func exactScale(s float64, dtype dtypes.DType) bool {
	frac, _ := math.Frexp(s)
	return frac == 0.5 && (dtype == dtypes.Float32 || dtype == dtypes.Float64)
}

// softmaxAndSum is the rest of attend from the scaled logits [B, h, Lq, Lk]: masks, softmax,
// dropout, weighted sum of v. Without withWeights, with no sinks and no dropout in effect, it
// normalises after the weighted sum (softmaxSum) and returns no weights.
func softmaxAndSum(logits, v *Node, ms *maskSet, drop dropoutSpec, withWeights bool) (output, weights *Node) {
	// 2) Masks: additive masks added, blocked pairs set to the fill value.
	raw := logits
	logits = ms.apply(logits, 0, 0) // [B, h, Lq, Lk]
	if !withWeights && ms.sinks == nil && !drop.active(logits.Graph()) {
		return softmaxSum(logits, v), nil // [B, h, Lq, dv]
	}
	// 3) Softmax over the keys; 4) dropout (training only).
	switch {
	case ms.sinks != nil:
		weights = sinkSoftmax(logits, ms.sinks) // [B, h, Lq, Lk]
	case !differentiableSlices(logits.Graph()) && len(ms.bias) == 0 && ms.softCap == 0 && math.IsInf(ms.fill, -1):
		// The pure-Go backend, masks that only block pairs, with −inf (a blocked pair's weight
		// is 0; with a finite fill a fully blocked row has weights, and its gradient must not
		// reach the unmasked logits): three passes less (softmax.go).
		weights = safeSoftmaxFinite(logits, raw) // [B, h, Lq, Lk]
	default:
		weights = safeSoftmax(logits) // [B, h, Lq, Lk]
	}
	weights = drop.apply(weights) // [B, h, Lq, Lk]
	// 5) Weighted sum of the values (of each query head's key/value head).
	output = groupedWeightedSum(weights, v) // [B, h, Lq, dv]
	return output, weights
}

// sinkSoftmax is safeSoftmax with one extra logit per head, sinks [h], in every row's
// denominator (attention sinks, AttentionOptions.Sinks):
//
//	m = max(max_j logits_j, sink_h) (a constant for the gradient)
//	w_j = exp(logits_j − m) / (exp(sink_h − m) + Σ_j exp(logits_j − m))
//
// A row whose every logit is −inf gets zeros (the sink takes all the mass).
func sinkSoftmax(logits, sinks *Node) *Node {
	dims := logits.Shape().Dimensions
	sink := BroadcastToDims(Reshape(sinks, 1, dims[1], 1, 1), dims[0], dims[1], dims[2], 1) // [B, h, Lq, 1]
	m := StopGradient(Max(ReduceAndKeep(logits, ReduceMax, -1), sink))                      // [B, h, Lq, 1], finite
	e := Exp(Sub(logits, m))                                                                // [B, h, Lq, Lk]
	s := Add(ReduceAndKeep(e, ReduceSum, -1), Exp(Sub(sink, m)))                            // [B, h, Lq, 1], ≥ 1
	return Div(e, s)                                                                        // [B, h, Lq, Lk]
}
