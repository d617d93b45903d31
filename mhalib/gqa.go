package mhalib

import (
	. "github.com/gomlx/gomlx/pkg/core/graph"
)

// Grouped-query attention (GQA, Ainslie et al. 2023) and multi-query attention (MQA, Shazeer
// 2019): k and v have Hkv heads, fewer than q's Hq, and each key/value head serves a group of
// G = Hq/Hkv consecutive query heads — query head h uses key/value head h / G, PyTorch's
// enable_gqa (equal to repeat_interleave of k and v over heads). The KV cache shrinks by G.
//
// The graph never repeats k or v. Query heads are consecutive within a group, so q
// [B, Hq, Lq, dk] is, without moving any data, [B, Hkv, G·Lq, dk]: the G query heads of a group
// become G·Lq rows against the group's one key head, one matrix product per key head:
//
//	q [B, Hq, Lq, dk] → [B, Hkv, G·Lq, dk] · k [B, Hkv, Lk, dk]ᵀ → [B, Hkv, G·Lq, Lk] → [B, Hq, Lq, Lk]
//
// and the weights go back the same way against v. With G = 1 both reshapes are no-ops.

// groupedScores returns q·kᵀ for q [B, Hq, Lq, dk] and k [B, Hkv, Lk, dk]: [B, Hq, Lq, Lk].
func groupedScores(q, k *Node) *Node {
	B, Hq, Lq, dk := q.Shape().Dim(0), q.Shape().Dim(1), q.Shape().Dim(2), q.Shape().Dim(3)
	Hkv, Lk := k.Shape().Dim(1), k.Shape().Dim(2)
	if Hkv == Hq {
		return DotGeneral(q, []int{3}, []int{0, 1}, k, []int{3}, []int{0, 1}) // [B, Hq, Lq, Lk]
	}
	G := Hq / Hkv
	qg := Reshape(q, B, Hkv, G*Lq, dk)                                   // [B, Hkv, G·Lq, dk]
	s := DotGeneral(qg, []int{3}, []int{0, 1}, k, []int{3}, []int{0, 1}) // [B, Hkv, G·Lq, Lk]
	return Reshape(s, B, Hq, Lq, Lk)                                     // [B, Hq, Lq, Lk]
}

// groupedWeightedSum returns w·v for weights w [B, Hq, Lq, Lk] and v [B, Hkv, Lk, dv]:
// [B, Hq, Lq, dv].
func groupedWeightedSum(w, v *Node) *Node {
	B, Hq, Lq, Lk := w.Shape().Dim(0), w.Shape().Dim(1), w.Shape().Dim(2), w.Shape().Dim(3)
	Hkv, dv := v.Shape().Dim(1), v.Shape().Dim(3)
	if Hkv == Hq {
		return DotGeneral(w, []int{3}, []int{0, 1}, v, []int{2}, []int{0, 1}) // [B, Hq, Lq, dv]
	}
	G := Hq / Hkv
	wg := Reshape(w, B, Hkv, G*Lq, Lk)                                   // [B, Hkv, G·Lq, Lk]
	o := DotGeneral(wg, []int{3}, []int{0, 1}, v, []int{2}, []int{0, 1}) // [B, Hkv, G·Lq, dv]
	return Reshape(o, B, Hq, Lq, dv)                                     // [B, Hq, Lq, dv]
}
