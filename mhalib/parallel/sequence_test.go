package parallel_test

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/gomlx/gomlx/backends"
	. "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/tensors"

	"github.com/mhalab/mhalab/mhalib"
	"github.com/mhalab/mhalab/mhalib/parallel"
)

// Sequence case: B=1, h=2, Lq=8 queries, Lk=16 keys of dk=dv=4. With top-left causal masking,
// keys 8…15 are visible to no query: on 4 and 8 devices whole shards see nothing.
const sB, sH, sLq, sLk, sD = 1, 2, 8, 16, 4

type seqData struct{ q, k, v, dOut *tensors.Tensor }

func newSeqData() seqData {
	rng := rand.New(rand.NewPCG(28, 2))
	return seqData{q: randTensor(rng, sB, sH, sLq, sD), k: randTensor(rng, sB, sH, sLk, sD),
		v: randTensor(rng, sB, sH, sLk, sD), dOut: randTensor(rng, sB, sH, sLq, sD)}
}

func mhalibCausal(causal bool) mhalib.Causal {
	if causal {
		return mhalib.CausalTopLeft
	}
	return mhalib.NoCausal
}

// referenceSDPA is mhalib.ScaledDotProductAttention over all keys on one device, and the
// gradients of ⟨out, dOut⟩ with respect to q, k, v.
func referenceSDPA(t *testing.T, backend backends.Backend, d seqData, causal bool) []*tensors.Tensor {
	t.Helper()
	return execOnce(t, backend, func(in []*Node) []*Node {
		q, k, v := in[0], in[1], in[2]
		o := mhalib.ScaledDotProductAttention(q, k, v).Causal(mhalibCausal(causal)).Done()
		return append([]*Node{o}, Gradient(ReduceAllSum(Mul(o, in[3])), q, k, v)...)
	}, d.q, d.k, d.v, d.dOut)
}

// runSequenceParallel runs SequenceParallelGradients on n devices (keys and values cut in n
// along the sequence); it returns out, dq (device 0, checked equal on all) and dk, dv joined.
func runSequenceParallel(t *testing.T, backend backends.Backend, d seqData, n int, causal bool) []*tensors.Tensor {
	t.Helper()
	r, err := parallel.NewRunner(backend, n, func(in []*Node) []*Node {
		out, dq, dk, dv := parallel.SequenceParallelGradients(in[0], in[1], in[2], parallel.DefaultScale(sD), causal, in[3], in[4])
		return []*Node{out, dq, dk, dv}
	})
	out, got := runSequence(t, r, err, d, n, true)
	for dev := 1; dev < n; dev++ {
		for i, name := range []string{"out", "dq"} {
			if maxDiff(flat(out[dev][i]), flat(out[0][i])) != 0 {
				t.Errorf("%d devices: %s differs between device 0 and device %d", n, name, dev)
			}
		}
	}
	return got
}

// runSequence runs r (and err, from building it) on n devices with the sequence case's inputs
// q, k and v cut along the keys, [offset,] dOut; it returns every device's outputs and out, dq
// (device 0) and dk, dv joined from the shards.
func runSequence(t *testing.T, r *parallel.Runner, err error, d seqData, n int, offset bool) (out [][]*tensors.Tensor, got []*tensors.Tensor) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Finalize()
	ks, vs := shard(t, d.k, 2, n), shard(t, d.v, 2, n)
	inputs := make([][]*tensors.Tensor, n)
	for dev := range n {
		inputs[dev] = []*tensors.Tensor{d.q, ks[dev], vs[dev]}
		if offset {
			inputs[dev] = append(inputs[dev], tensors.FromValue(int32(dev*sLk/n)))
		}
		inputs[dev] = append(inputs[dev], d.dOut)
	}
	if out, err = r.Run(inputs); err != nil {
		t.Fatal(err)
	}
	return out, []*tensors.Tensor{out[0][0], out[0][1], gather(t, out, 2, 2), gather(t, out, 3, 2)}
}

func TestSequenceParallelEqualsAttention(t *testing.T) {
	backend := cpuDevices(t)
	d := newSeqData()
	for _, causal := range []bool{false, true} {
		want := referenceSDPA(t, backend, d, causal)
		for _, n := range deviceCounts {
			t.Run(fmt.Sprintf("causal=%v/%d-devices", causal, n), func(t *testing.T) {
				got := runSequenceParallel(t, backend, d, n, causal)
				for i, name := range []string{"out", "dq", "dk", "dv"} {
					// Sums of Lk terms (the softmax and weights·v), dk in the logits.
					assertNear(t, name, got[i], want[i], bound(sLk+sD, flat(want[i]), 4))
				}
			})
		}
	}
}

// TestMergeTwoEqualsAttention merges two halves of the keys on one device (no collectives), and
// checks that dropping the rescaling (averaging the halves' outputs) is caught by the same bound.
func TestMergeTwoEqualsAttention(t *testing.T) {
	backend := cpuDevices(t)
	d := newSeqData()
	for _, causal := range []bool{false, true} {
		want := referenceSDPA(t, backend, d, causal)[0]
		out := execOnce(t, backend, func(in []*Node) []*Node {
			q, k, v := in[0], in[1], in[2]
			half := sLk / 2
			k1, k2 := Slice(k, AxisRange(), AxisRange(), AxisRange(0, half)), Slice(k, AxisRange(), AxisRange(), AxisRange(half))
			v1, v2 := Slice(v, AxisRange(), AxisRange(), AxisRange(0, half)), Slice(v, AxisRange(), AxisRange(), AxisRange(half))
			scale := parallel.DefaultScale(sD)
			o1, l1 := parallel.ShardAttention(q, k1, v1, scale, causal, Const(q.Graph(), int32(0)))
			o2, l2 := parallel.ShardAttention(q, k2, v2, scale, causal, Const(q.Graph(), int32(half)))
			merged, _ := parallel.MergeTwo(o1, l1, o2, l2)
			naive := DivScalar(Add(o1, o2), 2)
			return []*Node{merged, naive}
		}, d.q, d.k, d.v)
		tol := bound(sLk+sD, flat(want), 4)
		assertNear(t, fmt.Sprintf("causal=%v merged", causal), out[0], want, tol)
		if diff := maxDiff(flat(out[1]), flat(want)); diff <= tol {
			t.Errorf("causal=%v: the naive average of the halves is within the bound (%.3g ≤ %.3g): the test cannot tell a wrong merge", causal, diff, tol)
		}
	}
}
