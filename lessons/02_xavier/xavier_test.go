//go:build lessons || solution

package xavier

// The grader of lesson 2. `mhalab lessons check 2` restores this file from the original before
// it runs, so editing it cannot pass the exercise.

import (
	"fmt"
	"math"
	"strconv"
	"testing"

	. "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/tensors"
	"github.com/mhalab/mhalab/lessons/internal/grader"
	"github.com/mhalab/mhalab/mhalib/mhatest"
)

var lesson = grader.Lesson{Number: 2, Dir: "02_xavier"}

// draw runs the student's XavierUniform once from the state of seed.
func draw(t *testing.T, seed int64, fanOut, fanIn int) (state0, state1 *tensors.Tensor, w *mhatest.Tensor) {
	t.Helper()
	state0, err := RNGStateFromSeed(grader.Seed(uint64(seed)))
	if err != nil {
		t.Fatal(err)
	}
	what := "XavierUniform(rngState, " + strconv.Itoa(fanOut) + ", " + strconv.Itoa(fanIn) + ")"
	out := lesson.Run(t, what, func(g *Graph, in []*Node) []*Node {
		s, w := XavierUniform(in[0], fanOut, fanIn)
		return []*Node{s, w}
	}, state0)
	if got := out[1].Shape().Dimensions; !mhatest.SameShape(got, []int{fanOut, fanIn}) {
		lesson.Fatalf(t, "%s: expected shape [%d %d] ([fanOut, fanIn], PyTorch's layout), got %v", what, fanOut, fanIn, got)
	}
	w, err = grader.Host(out[1])
	if err != nil {
		lesson.Fatalf(t, "%s: %v", what, err)
	}
	return state0, out[0], w
}

// bound is the student's XavierBound(fanIn, fanOut), called by the student's program.
func bound(t *testing.T, fanIn, fanOut int) float64 {
	t.Helper()
	return grader.Call(lesson, t, fmt.Sprintf("XavierBound(%d, %d)", fanIn, fanOut), func() float64 { return XavierBound(fanIn, fanOut) })
}

// stats returns the mean, the variance and the extremes of x.
func stats(x []float64) (mean, variance, lo, hi float64) {
	lo, hi = math.Inf(1), math.Inf(-1)
	for _, v := range x {
		mean += v
		lo, hi = math.Min(lo, v), math.Max(hi, v)
	}
	mean /= float64(len(x))
	for _, v := range x {
		variance += (v - mean) * (v - mean)
	}
	return mean, variance / float64(len(x)), lo, hi
}

func TestLesson(t *testing.T) {
	t.Run("bound formula", func(t *testing.T) {
		for _, fans := range [][2]int{{32, 96}, {16, 48}, {512, 512}, {1, 1}, {100, 7}} {
			got, want := bound(t, fans[0], fans[1]), mhatest.XavierBound(fans[0], fans[1])
			if math.Abs(got-want) > 1e-12*want {
				lesson.Failf(t, "XavierBound(%d, %d): expected %.10g, got %.10g", fans[0], fans[1], want, got)
			}
		}
	})
	t.Run("bound of PyTorch's fused in-projection", func(t *testing.T) {
		// nn.MultiheadAttention(16, 4) initialises in_proj_weight [48, 16] as one matrix:
		// fan_in = 16, fan_out = 48 (lessons/testdata/xavier.safetensors).
		f := grader.LoadFixture(t, "xavier")
		want, _ := strconv.ParseFloat(f.Meta["in_proj_weight.bound"], 64)
		if got := bound(t, 16, 48); math.Abs(got-want) > 1e-12 {
			lesson.Failf(t, "XavierBound(16, 48) for in_proj_weight [48 16]: expected %.10g (PyTorch), got %.10g", want, got)
		}
		_, _, lo, hi := stats(f.Get(t, "sample.in_proj_weight").Data)
		if a := bound(t, 16, 48); math.Max(-lo, hi) > a {
			lesson.Failf(t, "PyTorch drew in_proj_weight values up to %.6g, beyond your bound XavierBound(16, 48) = %.6g", math.Max(-lo, hi), a)
		}
	})
	t.Run("shape fanOut by fanIn", func(t *testing.T) {
		draw(t, 1, 96, 32)
		draw(t, 2, 3, 7)
	})
	t.Run("values fill the interval", func(t *testing.T) {
		_, _, w := draw(t, 3, 96, 32)
		a := mhatest.XavierBound(32, 96)
		_, _, lo, hi := stats(w.Data)
		if lo < -a || hi > a {
			lesson.Failf(t, "XavierUniform(rngState, 96, 32): values must lie in (−a, a) = (%.4g, %.4g); got min %.4g, max %.4g", -a, a, lo, hi)
		}
		if lo > -0.95*a || hi < 0.95*a {
			lesson.Failf(t, "XavierUniform(rngState, 96, 32): 3072 draws from U(−a, a) reach close to ±a = ±%.4g; got min %.4g, max %.4g", a, lo, hi)
		}
	})
	t.Run("mean 0 and variance a squared over 3", func(t *testing.T) {
		_, _, w := draw(t, 4, 256, 256)
		a := mhatest.XavierBound(256, 256)
		mean, variance, _, _ := stats(w.Data)
		if math.Abs(mean) > 0.02*a { // ~9 standard errors of the mean of 65536 draws
			lesson.Failf(t, "XavierUniform(rngState, 256, 256): the mean of the draws should be near 0; got %.4g (a = %.4g)", mean, a)
		}
		if want := a * a / 3; math.Abs(variance-want) > 0.05*want {
			lesson.Failf(t, "XavierUniform(rngState, 256, 256): the variance of U(−a, a) is a²/3 = %.4g; got %.4g", want, variance)
		}
	})
	t.Run("draws from the random state", func(t *testing.T) {
		s0, s1, w1 := draw(t, 5, 8, 8)
		_, _, w2 := draw(t, 6, 8, 8)
		if d, _ := mhatest.MaxAbsDiff(w1, w2); d == 0 {
			lesson.Failf(t, "XavierUniform gave the same weight for two different random states: draw from rngState (RandomUniform)")
		}
		a, b := tensors.MustCopyFlatData[uint64](s0), tensors.MustCopyFlatData[uint64](s1)
		same := len(a) == len(b)
		for i := range a {
			same = same && a[i] == b[i]
		}
		if same {
			lesson.Failf(t, "XavierUniform returned the random state it was given: return the new state RandomUniform gives you, or the next weight will repeat this one")
		}
	})
	t.Run("matches PyTorch's samples", func(t *testing.T) {
		// torch.nn.init.xavier_uniform_ on a [96, 32] weight (lessons/testdata/xavier.safetensors).
		f := grader.LoadFixture(t, "xavier")
		torchW := f.Get(t, "sample.w")
		_, torchVar, lo, hi := stats(torchW.Data)
		a := bound(t, 32, 96)
		if m := math.Max(-lo, hi); m > a || m < 0.95*a {
			lesson.Failf(t, "PyTorch's xavier_uniform_ sample for [96 32] reaches %.6g; your XavierBound(32, 96) = %.6g should be just above it", m, a)
		}
		_, _, w := draw(t, 7, 96, 32)
		_, variance, _, _ := stats(w.Data)
		if math.Abs(variance-torchVar) > 0.12*torchVar {
			lesson.Failf(t, "XavierUniform(rngState, 96, 32): variance %.4g, PyTorch's sample has %.4g", variance, torchVar)
		}
	})
}
