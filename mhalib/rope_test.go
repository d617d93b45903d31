package mhalib_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/gomlx/gomlx/backends"
	"github.com/gomlx/gomlx/pkg/core/dtypes"
	. "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/tensors"

	"github.com/mhalab/mhalab/internal/backendtest"
	"github.com/mhalab/mhalab/mhalib"
	"github.com/mhalab/mhalab/mhalib/mhatest"
)

// RoPE against the float64 reference: both conventions, three bases, full and partial rotary
// dims, a constant offset and a position node; output and gradient, float64 and float32.
func TestRoPE(t *testing.T) {
	backendtest.Run(t, func(t *testing.T, backend backends.Backend) {
		for _, conv := range []mhalib.RoPEConvention{mhalib.RoPEHalfSplit, mhalib.RoPEInterleaved} {
			for _, theta := range []float64{10000, 100000, 500000} {
				for _, rd := range []int{0, 4} {
					name := fmt.Sprintf("%s/theta%g/rd%d", conv, theta, rd)
					t.Run(name, func(t *testing.T) {
						rng := rand.New(rand.NewPCG(seedOf(name), 1))
						x := mhatest.Rand(rng, -1, 1, 2, 3, 5, 8)
						cot := mhatest.Rand(rng, -1, 1, 2, 3, 5, 8)
						spec := mhatest.RoPESpec{Theta: theta, RotaryDims: rd, Interleaved: conv == mhalib.RoPEInterleaved, Offset: 3 + 40}
						want := mhatest.RoPE(x, spec)
						for _, dt := range []dtypes.DType{dtypes.Float64, dtypes.Float32} {
							exec := MustNewExec(backend, func(x, pos, cot *Node) []*Node {
								y := mhalib.RoPE(x).Theta(theta).RotaryDims(rd).Convention(conv).Offset(3).Position(pos).Done()
								return []*Node{y, Gradient(ReduceAllSum(Mul(y, cot)), x)[0]}
							})
							res, err := exec.Exec(toTensor(x, dt), tensors.FromScalar(int32(40)), toTensor(cot, dt))
							if err != nil {
								t.Fatal(err)
							}
							assertClose(t, dt.String()+" output", res[0], want, 10*tolFor(dt))
							loss := func() float64 { return mhatest.Loss(mhatest.RoPE(x, spec), cot) }
							assertClose(t, dt.String()+" gradient", res[1], mhatest.NumGrad(loss, x, 1e-6), 1e-4)
						}
					})
				}
			}
		}
	})
}

// Scores after RoPE depend only on i − j, in the graph too: q at positions p…p+3 against k at
// positions p…p+3 gives the same scores for p = 0 and p = 1000.
func TestRoPEScoresRelative(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 2))
	q := mhatest.Rand(rng, -1, 1, 1, 2, 4, 8)
	k := mhatest.Rand(rng, -1, 1, 1, 2, 4, 8)
	backendtest.Run(t, func(t *testing.T, backend backends.Backend) {
		for _, conv := range []mhalib.RoPEConvention{mhalib.RoPEHalfSplit, mhalib.RoPEInterleaved} {
			w := MustExecOnceN(backend, func(q, k *Node) []*Node {
				scores := func(p int) *Node {
					_, w := mhalib.ScaledDotProductAttention(mhalib.RoPE(q).Convention(conv).Offset(p).Done(),
						mhalib.RoPE(k).Convention(conv).Offset(p).Done(), k).DoneWithWeights()
					return w
				}
				return []*Node{scores(0), scores(1000)}
			}, toTensor(q, dtypes.Float64), toTensor(k, dtypes.Float64))
			assertClose(t, conv.String()+" shifted weights", w[1], fromTensor(t, w[0]), 1e-9)
		}
	})
}

func TestRoPEErrors(t *testing.T) {
	b := goBackend()
	for _, c := range []struct {
		name  string
		shape []int
		rd    int
		theta float64
		want  string
	}{
		{"odd headDim", []int{1, 1, 2, 5}, 0, 10000, "RotaryDims"},
		{"rotary > d", []int{1, 1, 2, 4}, 6, 10000, "RotaryDims"},
		{"odd rotary", []int{1, 1, 2, 8}, 3, 10000, "RotaryDims"},
		{"rank 3", []int{1, 2, 4}, 0, 10000, "x"},
		{"theta 0", []int{1, 1, 2, 4}, 0, 0, "Theta"},
	} {
		_, err := MustNewExec(b, func(x *Node) *Node {
			return mhalib.RoPE(x).RotaryDims(c.rd).Theta(c.theta).Done()
		}).Exec(zeros(dtypes.Float32, c.shape...))
		var ae *mhalib.ArgumentError
		if !errors.As(err, &ae) || ae.Arg != c.want {
			t.Errorf("%s: err = %v, want an ArgumentError for %q", c.name, err, c.want)
		}
	}
}
