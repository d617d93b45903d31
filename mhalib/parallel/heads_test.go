package parallel_test

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/gomlx/gomlx/backends"
	. "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/tensors"
	"github.com/gomlx/gomlx/pkg/ml/context"

	"github.com/mhalab/mhalab/mhalib"
	"github.com/mhalab/mhalab/mhalib/parallel"
)

// headCase: B=2, L=6, E=16, 8 heads of 2 features: 8 devices hold one head each.
const (
	hB, hL, hE, hHeads = 2, 6, 16, 8
)

type headData struct {
	x, dy          *tensors.Tensor // [B, L, E]
	wq, wk, wv, wo *tensors.Tensor // [E, E]
}

func newHeadData() headData {
	rng := rand.New(rand.NewPCG(28, 1))
	return headData{
		x: randTensor(rng, hB, hL, hE), dy: randTensor(rng, hB, hL, hE),
		wq: randTensor(rng, hE, hE), wk: randTensor(rng, hE, hE), wv: randTensor(rng, hE, hE), wo: randTensor(rng, hE, hE),
	}
}

// referenceMHA is mhalib.MultiHeadAttention (no bias) on one device with the full weights: y and
// the gradients of ⟨y, dy⟩ with respect to x, Wq, Wk, Wv, Wo.
func referenceMHA(t *testing.T, backend backends.Backend, d headData, causal mhalib.Causal) []*tensors.Tensor {
	t.Helper()
	ctx := context.New()
	sd := map[string]*tensors.Tensor{"q_proj_weight": d.wq, "k_proj_weight": d.wk, "v_proj_weight": d.wv, "out_proj.weight": d.wo}
	if err := mhalib.LoadStateDict(ctx, mhalib.DefaultScope, sd); err != nil {
		t.Fatal(err)
	}
	exec, err := context.NewExec(backend, ctx, func(ctx *context.Context, in []*Node) []*Node {
		x, dy := in[0], in[1]
		y := mhalib.MultiHeadAttention(ctx, x, x, x, hHeads).UseBias(false).SeparateProjections(true).Causal(causal).Done()
		scope := ctx.In(mhalib.DefaultScope)
		g := x.Graph()
		wrt := []*Node{x}
		for _, name := range []string{"q_proj_weight", "k_proj_weight", "v_proj_weight"} {
			wrt = append(wrt, scope.GetVariableByScopeAndName(scope.Scope(), name).ValueGraph(g))
		}
		out := scope.In(mhalib.ScopeOutProj)
		wrt = append(wrt, out.GetVariableByScopeAndName(out.Scope(), "weight").ValueGraph(g))
		return append([]*Node{y}, Gradient(ReduceAllSum(Mul(y, dy)), wrt...)...)
	})
	if err != nil {
		t.Fatal(err)
	}
	defer exec.Finalize()
	out, err := exec.Exec(d.x, d.dy)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func shard(t *testing.T, x *tensors.Tensor, axis, n int) []*tensors.Tensor {
	t.Helper()
	s, err := parallel.Shard(x, axis, n)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// runHeadParallel runs HeadParallelGradients on n devices and returns y, dx (from device 0,
// after checking every device has the same) and the weights' gradients joined from the shards.
func runHeadParallel(t *testing.T, backend backends.Backend, d headData, n int, causal mhalib.Causal) []*tensors.Tensor {
	t.Helper()
	local := hHeads / n
	r, err := parallel.NewRunner(backend, n, func(in []*Node) []*Node {
		w := parallel.HeadWeights{Wq: in[2], Wk: in[3], Wv: in[4], Wo: in[5]}
		y, g := parallel.HeadParallelGradients(in[0], w, local, causal, in[1])
		return []*Node{y, g.Dx, g.DWq, g.DWk, g.DWv, g.DWo}
	})
	out, got := runHeads(t, r, err, d, n)
	for dev := 1; dev < n; dev++ { // replicated outputs: bit-identical on every device
		for i, name := range []string{"y", "dx"} {
			if maxDiff(flat(out[dev][i]), flat(out[0][i])) != 0 {
				t.Errorf("%d devices: %s differs between device 0 and device %d", n, name, dev)
			}
		}
	}
	return got
}

// runHeads runs r (and err, from building it) on n devices with the head case's inputs, the
// weights cut by heads; it returns every device's outputs and y, dx (device 0) and the weights'
// gradients joined from the shards.
func runHeads(t *testing.T, r *parallel.Runner, err error, d headData, n int) (out [][]*tensors.Tensor, got []*tensors.Tensor) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Finalize()
	wq, wk, wv, wo := shard(t, d.wq, 0, n), shard(t, d.wk, 0, n), shard(t, d.wv, 0, n), shard(t, d.wo, 1, n)
	inputs := make([][]*tensors.Tensor, n)
	for dev := range n {
		inputs[dev] = []*tensors.Tensor{d.x, d.dy, wq[dev], wk[dev], wv[dev], wo[dev]}
	}
	if out, err = r.Run(inputs); err != nil {
		t.Fatal(err)
	}
	return out, []*tensors.Tensor{out[0][0], out[0][1], gather(t, out, 2, 0), gather(t, out, 3, 0), gather(t, out, 4, 0), gather(t, out, 5, 1)}
}

func TestHeadParallelEqualsMultiHeadAttention(t *testing.T) {
	backend := cpuDevices(t)
	d := newHeadData()
	names := []string{"y", "dx", "dWq", "dWk", "dWv", "dWo"}
	for _, causal := range []mhalib.Causal{mhalib.NoCausal, mhalib.CausalTopLeft} {
		want := referenceMHA(t, backend, d, causal)
		for _, n := range deviceCounts {
			t.Run(fmt.Sprintf("%s/%d-devices", causal, n), func(t *testing.T) {
				got := runHeadParallel(t, backend, d, n, causal)
				for i, name := range names {
					// The longest sums: E terms in the projections (and their gradients), B·L for
					// the weights' gradients, L in the attention.
					assertNear(t, name, got[i], want[i], bound(hE+hB*hL, flat(want[i]), 4))
				}
			})
		}
	}
}
