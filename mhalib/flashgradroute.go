package mhalib

import (
	. "github.com/gomlx/gomlx/pkg/core/graph"
)

// FlashAttention's gradient without packing its operands, where only q, k and v need one.
//
// flashAttendGrad packs o, lse, q, k, v (and the masks and sinks that take a gradient) in one
// matrix so that one identity with a custom gradient reaches them all (flashgrad.go, "A
// gradient of several inputs"). That packing is paid on every forward pass, with or without a
// gradient: at causal L 4096 on the pure-Go backend (fastgo's BenchmarkMHA/long_causal) the
// Concatenate of 10.5 M values, the lse column and the copies of q, k, v the packing made were
// ~6% of the time. Without lse among the results and without masks or sinks to differentiate
// (MultiHeadAttention's Flash formulation), the gradient reaches q, k and v another way:
//
//	qI, kI, vI = identities of q, k, v, each with the custom gradient "my part of backward(dO)"
//	o  = flashAttend(q, k, v), gradients stopped        [B, Hq, Lq, dv]
//	a  = |0·(qI[0] + kI[0] + vI[0])| + 0, 0 where not finite  a scalar +0 (routeAnchor)
//	out = identity of (o − a) with the custom gradient "remember dO, pass it on"
//
// out is o bit for bit (x − (+0) = x, −0 included). Autodiff reaches out first (it is
// downstream of qI, kI and vI, so its gradient is complete before theirs is asked for), which
// records dO; the identities of q, k and v then ignore their own adjoint (the gradient of one
// entry through a) and return their part of backward(dO), built once per dO. The forward pass
// pays three one-element gathers and a few scalar ops; on the pure-Go backend the subtraction
// of +0 hands o on as it is (fastgo), elsewhere it is a pass over o or fused away.
//
// Only on the pure-Go backend's path by query blocks (flashrows.go), the one measured. With
// other masks there (flashblocks.go) the backward pass's schedule keeps two [B, h, BlockK, d]
// pieces per pair of query and key blocks alive at its peak (goPooledBytes' replay: 146 at
// L 1024, 546 at L 2048), which the packing's large buffers, linear in L, had kept out of sight
// of TestFlashGradientGoPoolsAreLinear's ratio (2.29× packed; 2.63× routed, with 35% fewer bytes
// at L 2048): that path keeps the packing until its pieces are fixed.

// flashAttendRouted is flashAttendGrad (without lse) for masks ms with no additive masks or
// sinks (flashByRowsFits), so that only q, k and v take a gradient: q [B, Hq, Lq, dk], k
// [B, Hkv, Lk, dk] and v [B, Hkv, Lk, dv] head-major, or, with seq, [B, Lq, Hq, dk], [B, Lk, Hkv, dk]
// and [B, Lk, Hkv, dv] sequence-major (the projections' layout: seqmajor.go), which the forward
// pass reads through flashByRowsIn without SplitHeads' transposes while the backward pass
// (flashBackward) takes them head-major, transposed only when a gradient is computed, and each
// input's gradient is transposed back. The output is head-major, [B, Hq, Lq, dv].
func flashAttendRouted(q, k, v *Node, seq bool, scale float64, ms *maskSet, blockQ, blockK int) *Node {
	route := &flashRoute{seq: seq}
	qI := IdentityWithCustomGradient(q, route.part(0))
	kI := IdentityWithCustomGradient(k, route.part(1))
	vI := IdentityWithCustomGradient(v, route.part(2))
	// The anchor reads the identities before the stopped copies below do, so that on the
	// pure-Go backend (nodes run in the order built) each StopGradient is its input's last use
	// and takes its buffer over instead of copying it.
	anchor := routeAnchor(qI, kI, vI) // scalar +0
	qs, ks, vs := StopGradient(qI), StopGradient(kI), StopGradient(vI)
	headMajor := func(x *Node) *Node { // [B, h, L, d]
		if seq {
			return TransposeAllDims(x, 0, 2, 1, 3)
		}
		return x
	}
	route.fb = &flashBackward{
		q: headMajor(qs), k: headMajor(ks), v: headMajor(vs),
		ms: ms.stoppedGradients(), scale: scale, blockQ: blockQ, blockK: blockK,
	}
	fb := route.fb
	if seq {
		fb.o, fb.lse = flashByRowsIn(qs, ks, vs, true, scale, fb.ms, blockQ, true) // [B, Hq, Lq, dv], [B, Hq, Lq]
	} else {
		fb.o, fb.lse = flashAttend(fb.q, fb.k, fb.v, scale, fb.ms, blockQ, blockK, true) // [B, Hq, Lq, dv], [B, Hq, Lq]
	}
	return IdentityWithCustomGradient(Sub(StopGradient(route.fb.o), anchor), route.output) // [B, Hq, Lq, dv]
}

// routeAnchor is +0 computed from the first entries of q, k and v: |0·t| for their sum t (0 where
// t is not finite), plus +0. Either alone leaves a −0 (t < 0) on one backend: GoMLX v0.26's
// pure-Go Abs negates only x < 0, so |−0| is −0 there, and XLA simplifies x + 0 to x. o − (+0)
// is o bit for bit, −0 included, and the pure-Go backend's fastgo then hands o over without a
// pass over it (binary.go, identityOperand).
func routeAnchor(q, k, v *Node) *Node {
	t := Add(Add(entry0(q), entry0(k)), entry0(v))                              // scalar
	return AddScalar(Abs(MulScalar(Where(IsFinite(t), t, ZerosLike(t)), 0)), 0) // scalar +0
}

// entry0 is x's first entry as a scalar, by one Gather of x itself (differentiable on every
// backend; a Reshape first would copy x on the pure-Go backend, whose buffer x's other use keeps).
func entry0(x *Node) *Node {
	at := Const(x.Graph(), [][]int32{make([]int32, x.Rank())}) // [1, rank]: index 0 on every axis
	return Reshape(Gather(x, at))                              // scalar
}

// flashRoute carries dO from the output's gradient to the gradients of q, k and v.
type flashRoute struct {
	seq   bool // the inputs are sequence-major (flashAttendRouted): gradients transposed back
	fb    *flashBackward
	dO    *Node   // the output's adjoint, as last recorded
	grads []*Node // backward(dO): dq, dk, dv
	of    *Node   // the dO grads were built for
}

// output records the output's adjoint dO [B, Hq, Lq, dv] and passes it on (to the stopped o and
// the anchor: neither takes it further than the anchor's one entry, which part ignores).
func (r *flashRoute) output(_, dO *Node) *Node {
	r.dO = dO
	return dO
}

// part returns the custom gradient of input i (0: q, 1: k, 2: v): its part of backward(dO).
func (r *flashRoute) part(i int) func(x, adj *Node) *Node {
	return func(_, _ *Node) *Node {
		if r.dO == nil {
			panicArg("FlashAttention", "internal: the gradient of its inputs was asked before its output's")
		}
		if r.of != r.dO {
			r.grads, r.of = r.fb.gradients(r.dO, nil), r.dO
			for j, g := range r.grads {
				if r.seq {
					g = TransposeAllDims(g, 0, 2, 1, 3) // [B, L, h, d]
				}
				r.grads[j] = IdentityWithCustomGradient(g, noSecondDerivative)
			}
		}
		return r.grads[i]
	}
}
