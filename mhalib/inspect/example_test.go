package inspect_test

import (
	"fmt"

	. "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/tensors"
	"github.com/gomlx/gomlx/pkg/ml/context"

	"github.com/mhalab/mhalab/internal/tensortest"
	"github.com/mhalab/mhalab/mhalib"
	"github.com/mhalab/mhalab/mhalib/inspect"
	"github.com/mhalab/mhalab/mhalib/train"
)

func ExampleCheckRowsSumToOne() {
	good := tensors.FromValue([][]float32{{0.25, 0.75}, {0, 0}}) // the second row is fully masked
	bad := tensors.FromValue([][]float32{{0.5, 0.6}})
	fmt.Println(inspect.CheckRowsSumToOne(good, 1e-6))
	fmt.Println(inspect.CheckRowsSumToOne(bad, 1e-6))
	// Output:
	// <nil>
	// mhalib: weights shape (Float32)[1 2]: 1 rows (0 fully masked): max |Σw − 1| = 0.1 > tol 1e-06, 0 negative, 0 NaN/Inf entries
}

func ExampleHeadDiversity() {
	w := tensors.FromValue([][][][]float64{{{{1, 0}}, {{0, 1}}}}) // [B=1, h=2, Lq=1, Lk=2]: heads look at different keys
	fmt.Printf("%.4f (ln 2 is the maximum)\n", inspect.HeadDiversity(w))
	// Output:
	// 0.6931 (ln 2 is the maximum)
}

// Gradient of every weight of an attention layer, summarised.
func ExampleGradientReport() {
	ctx := context.New()
	ctx.SetParam(context.ParamInitialSeed, int64(1))
	var names []string
	exec := context.MustNewExec(goBackend(), ctx, func(ctx *context.Context, x *Node) []*Node {
		out := mhalib.MultiHeadAttention(ctx, x, x, x, 2).Done()
		var grads []*Node
		names, grads = train.VariableGradients(ctx, ReduceAllSum(Square(out)))
		return grads
	})
	res := exec.MustExec(tensortest.Ramp(2, 3, 4))
	grads := map[string]*tensors.Tensor{}
	for i, n := range names {
		grads[n] = res[i]
	}
	for _, st := range inspect.GradientReport(grads) {
		fmt.Println(st.Name, st.Finite, st.MaxAbs > 0)
	}
	// Output:
	// /MultiHeadAttention/in_proj_bias true true
	// /MultiHeadAttention/in_proj_weight true true
	// /MultiHeadAttention/out_proj/bias true true
	// /MultiHeadAttention/out_proj/weight true true
}

// Finding where a NaN appears first.
func ExampleFirstNaN() {
	n, err := inspect.FirstNaN(goBackend(), context.New(), func(ctx *context.Context, in []*Node) []*Node {
		x := MulScalar(in[0], 2)
		y := Sqrt(SubScalar(x, 1)) // NaN for x < 1
		return []*Node{Exp(y)}
	}, []float32{0.25, 2})
	fmt.Println(err, n.Node)
	// Output:
	// <nil> Sqrt(x=[#4]) -> [(Float32)[2]] - mem: [8 B]
}

// Loading a PyTorch nn.MultiheadAttention state_dict (here E = 2, identity projections).
func ExampleLoadStateDict() {
	eye := [][]float32{{1, 0}, {0, 1}}
	sd := map[string]*tensors.Tensor{
		"in_proj_weight":  tensors.FromValue([][]float32{{1, 0}, {0, 1}, {1, 0}, {0, 1}, {1, 0}, {0, 1}}), // [3E, E]
		"in_proj_bias":    tensors.FromValue(make([]float32, 6)),                                          // [3E]
		"out_proj.weight": tensors.FromValue(eye),                                                         // [E, E]
		"out_proj.bias":   tensors.FromValue([]float32{0, 0}),                                             // [E]
	}
	ctx := context.New()
	if err := mhalib.LoadStateDict(ctx, mhalib.DefaultScope, sd); err != nil {
		panic(err)
	}
	exec := context.MustNewExec(goBackend(), ctx, func(ctx *context.Context, x *Node) *Node {
		return mhalib.MultiHeadAttention(ctx, x, x, x, 1).Done()
	})
	fmt.Printf("%.3f\n", tensors.MustCopyFlatData[float32](exec.MustExec([][][]float32{{{1, 0}, {0, 1}}})[0]))
	err := mhalib.LoadStateDict(context.New(), "", map[string]*tensors.Tensor{"out_proj.weight": tensors.FromValue(eye), "in_proj_weight": tensors.FromValue(eye)})
	fmt.Println(err)
	// Output:
	// [0.670 0.330 0.330 0.670]
	// mhalib: state_dict key in_proj_weight: shape (Float32)[2 2]: expected [6 2] (E=2 from out_proj.weight)
}
