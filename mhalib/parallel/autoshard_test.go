package parallel_test

import (
	"fmt"
	"testing"

	. "github.com/gomlx/gomlx/pkg/core/graph"

	"github.com/mhalab/mhalab/mhalib"
	"github.com/mhalab/mhalab/mhalib/parallel"
)

// TestAutoShardingHeadsEqualsExplicit gives XLA the single-device attention with the weights
// cut by heads (sharding annotations only) and compares with mhalib.MultiHeadAttention: the
// partitioner must find the same program HeadParallel spells out.
func TestAutoShardingHeadsEqualsExplicit(t *testing.T) {
	backend := cpuDevices(t)
	d := newHeadData()
	names := []string{"y", "dx", "dWq", "dWk", "dWv", "dWo"}
	rep, rows, cols := parallel.Cut{Rank: 3, Axis: parallel.Replicated}, parallel.Cut{Rank: 2, Axis: 0}, parallel.Cut{Rank: 2, Axis: 1}
	for _, causal := range []mhalib.Causal{mhalib.NoCausal, mhalib.CausalTopLeft} {
		want := referenceMHA(t, backend, d, causal)
		for _, n := range deviceCounts {
			t.Run(fmt.Sprintf("%s/%d-devices", causal, n), func(t *testing.T) {
				r, err := parallel.NewAutoRunner(backend, n, func(in []*Node) []*Node {
					x, dy := in[0], in[1]
					w := parallel.HeadWeights{Wq: in[2], Wk: in[3], Wv: in[4], Wo: in[5]}
					y, _ := parallel.HeadParallel(x, w, hHeads, causal) // one device's program: all heads
					return append([]*Node{y}, Gradient(ReduceAllSum(Mul(y, dy)), x, w.Wq, w.Wk, w.Wv, w.Wo)...)
				}, []parallel.Cut{rep, rep, rows, rows, rows, cols}, []parallel.Cut{rep, rep, rows, rows, rows, cols})
				_, got := runHeads(t, r, err, d, n)
				for i, name := range names {
					assertNear(t, name, got[i], want[i], bound(hE+hB*hL, flat(want[i]), 4))
				}
			})
		}
	}
}

// TestAutoShardingSequenceEqualsAttention cuts keys and values along the sequence and gives XLA
// plain mhalib attention: the partitioner has to gather or merge the shards itself.
func TestAutoShardingSequenceEqualsAttention(t *testing.T) {
	backend := cpuDevices(t)
	d := newSeqData()
	rep, seq := parallel.Cut{Rank: 4, Axis: parallel.Replicated}, parallel.Cut{Rank: 4, Axis: 2}
	for _, causal := range []bool{false, true} {
		want := referenceSDPA(t, backend, d, causal)
		for _, n := range deviceCounts {
			t.Run(fmt.Sprintf("causal=%v/%d-devices", causal, n), func(t *testing.T) {
				r, err := parallel.NewAutoRunner(backend, n, func(in []*Node) []*Node {
					q, k, v := in[0], in[1], in[2]
					o := mhalib.ScaledDotProductAttention(q, k, v).Causal(mhalibCausal(causal)).Done()
					return append([]*Node{o}, Gradient(ReduceAllSum(Mul(o, in[3])), q, k, v)...)
				}, []parallel.Cut{rep, seq, seq, rep}, []parallel.Cut{rep, rep, seq, seq})
				_, got := runSequence(t, r, err, d, n, false)
				for i, name := range []string{"out", "dq", "dk", "dv"} {
					assertNear(t, name, got[i], want[i], bound(sLk+sD, flat(want[i]), 4))
				}
			})
		}
	}
}
