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

// Data case: a batch of 8 sequences of 4 tokens, E=8, 2 heads: 8 devices hold one sequence each.
const dB, dL, dE, dHeads = 8, 4, 8, 2

// blockGradients runs DataParallelGradients on n devices (x and target cut along the batch) with
// a context whose variables were initialised by seed; it returns the loss and gradients of device
// 0 (checked equal on every device), by name.
func blockGradients(t *testing.T, backend backends.Backend, n int, x, target *tensors.Tensor) (loss *tensors.Tensor, grads map[string]*tensors.Tensor) {
	t.Helper()
	ctx := context.New()
	ctx.SetRNGStateFromSeed(28)
	var names []string
	r, err := parallel.NewContextRunner(backend, n, ctx, func(ctx *context.Context, in []*Node) []*Node {
		l, ns, gs := parallel.DataParallelGradients(ctx, in[0], in[1], dHeads, dB, mhalib.CausalTopLeft)
		names = ns
		return append([]*Node{l}, gs...)
	})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Finalize()
	xs, ts := shard(t, x, 0, n), shard(t, target, 0, n)
	inputs := make([][]*tensors.Tensor, n)
	for dev := range n {
		inputs[dev] = []*tensors.Tensor{xs[dev], ts[dev]}
	}
	perDevice, err := r.Run(inputs)
	if err != nil {
		t.Fatal(err)
	}
	var out []*tensors.Tensor
	for _, o := range perDevice {
		out = append(out, o...)
	}
	per := len(out) / n
	for dev := 1; dev < n; dev++ {
		for i := range per {
			if maxDiff(flat(out[dev*per+i]), flat(out[i])) != 0 {
				t.Errorf("%d devices: output %d differs between device 0 and device %d", n, i, dev)
			}
		}
	}
	grads = map[string]*tensors.Tensor{}
	for i, name := range names {
		grads[name] = out[1+i]
	}
	return out[0], grads
}

func TestDataParallelBlockGradients(t *testing.T) {
	backend := cpuDevices(t)
	rng := rand.New(rand.NewPCG(28, 3))
	x, target := randTensor(rng, dB, dL, dE), randTensor(rng, dB, dL, dE)
	wantLoss, want := blockGradients(t, backend, 1, x, target)
	if len(want) != 6 { // norm weight, bias; in_proj weight, bias; out_proj weight, bias
		t.Fatalf("%d gradients (%v), want 6", len(want), want)
	}
	for _, n := range deviceCounts[1:] {
		t.Run(fmt.Sprintf("%d-devices", n), func(t *testing.T) {
			loss, got := blockGradients(t, backend, n, x, target)
			// Sums over the batch: B·L·E terms for the loss, B·L for the weights' gradients.
			assertNear(t, "loss", loss, wantLoss, bound(dB*dL*dE, flat(wantLoss), 1))
			for name, w := range want {
				assertNear(t, name, got[name], w, bound(dB*dL+dE, flat(w), 4))
			}
		})
	}
}
