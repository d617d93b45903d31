package mhalib

import (
	"math"

	"github.com/gomlx/gomlx/pkg/core/dtypes"
	. "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/shapes"
	"github.com/gomlx/gomlx/pkg/ml/context"
)

// Init selects how mhalib initialises the weights it creates. Choose it with WithInit.
type Init int

const (
	// InitXavierUniform (the default): every weight matrix W [out, in] is drawn from
	// U(−a, a) with a = √(6/(fan_in+fan_out)) (torch.nn.init.xavier_uniform_, fan_in = in,
	// fan_out = out; for in_proj_weight [3E, E] that is √(6/(4E)), as PyTorch), every bias is 0.
	// bias_k / bias_v [1,1,E] are Xavier-uniform too (fan_in = fan_out = E).
	InitXavierUniform Init = iota

	// InitTorchLinear is PyTorch's nn.Linear default: kaiming_uniform_(a=√5), i.e. W ~ U(−1/√fan_in, 1/√fan_in),
	// and bias ~ U(−1/√fan_in, 1/√fan_in). bias_k / bias_v are xavier_normal_ (std 1/√E), as PyTorch.
	InitTorchLinear

	// InitTorchMHA is exactly nn.MultiheadAttention._reset_parameters: in_proj (fused or separate)
	// Xavier-uniform, in_proj_bias 0, out_proj.weight as nn.Linear (U(−1/√E, 1/√E)), out_proj.bias 0,
	// bias_k / bias_v xavier_normal_. For a plain Linear it is the same as InitTorchLinear with zero bias.
	InitTorchMHA
)

// String names the initialiser.
func (i Init) String() string {
	switch i {
	case InitXavierUniform:
		return "InitXavierUniform"
	case InitTorchLinear:
		return "InitTorchLinear"
	case InitTorchMHA:
		return "InitTorchMHA"
	}
	return "Init(?)"
}

// ParamInit is the context parameter (an int holding an Init) read by Linear and MultiHeadAttention.
const ParamInit = "mhalib_init"

// WithInit stores init as a parameter of ctx's current scope (visible in its sub-scopes) and returns ctx.
// Like ctx.SetParam it changes the shared context data, not a copy.
func WithInit(ctx *context.Context, init Init) *context.Context {
	ctx.SetParam(ParamInit, int(init))
	return ctx
}

// initOf returns the Init configured for ctx's scope (InitXavierUniform if none).
func initOf(ctx *context.Context) Init {
	return Init(context.GetParamOr(ctx, ParamInit, int(InitXavierUniform)))
}

// XavierBound returns √(6/(fanIn+fanOut)), the bound of torch.nn.init.xavier_uniform_ (gain 1).
func XavierBound(fanIn, fanOut int) float64 {
	return math.Sqrt(6 / float64(fanIn+fanOut))
}

// torchLinearBound returns 1/√fanIn: the bound of kaiming_uniform_(a=√5), nn.Linear's default,
// (gain √(2/(1+5)) · √(3/fanIn)), which is also the bound nn.Linear uses for its bias.
func torchLinearBound(fanIn int) float64 {
	return 1 / math.Sqrt(float64(fanIn))
}

// uniformInit draws U(−bound, bound) from ctx's random number generator.
func uniformInit(ctx *context.Context, bound float64) context.VariableInitializer {
	return func(g *Graph, shape shapes.Shape) *Node {
		u := ctx.RandomUniform(g, shape) // U[0, 1)
		return AddScalar(MulScalar(u, 2*bound), -bound)
	}
}

// normalInit draws N(0, std²) from ctx's random number generator.
func normalInit(ctx *context.Context, std float64) context.VariableInitializer {
	return func(g *Graph, shape shapes.Shape) *Node {
		return MulScalar(ctx.RandomNormal(g, shape), std)
	}
}

// zeroInit initialises with zeros.
func zeroInit(g *Graph, shape shapes.Shape) *Node { return Zeros(g, shape) }

// Variable returns the value in graph g of the variable name in ctx's current scope, creating
// it with init (zeros when nil) if it does not exist: the rule every mhalib layer follows, for
// layers built on mhalib. A variable that already holds a value (loaded by LoadStateDict or set
// by an earlier execution) is reused; its shape [dims] and dtype must be the requested ones,
// else it panics with an *ArgumentError naming the variable.
func Variable(ctx *context.Context, g *Graph, name string, dtype dtypes.DType, dims []int,
	init context.VariableInitializer) *Node {
	if init == nil {
		init = zeroInit
	}
	return variable(ctx, g, name, dtype, dims, init)
}

// variable returns the value in graph g of the variable name in ctx's current scope, creating it
// with init if it does not exist. A variable that already holds a value (loaded by LoadStateDict
// or set by an earlier execution) is reused; its shape and dtype must be the requested ones.
func variable(ctx *context.Context, g *Graph, name string, dtype dtypes.DType, dims []int,
	init context.VariableInitializer) *Node {
	want := shapes.Make(dtype, dims...)
	if v := ctx.GetVariableByScopeAndName(ctx.Scope(), name); v != nil {
		if !v.Shape().Equal(want) {
			panicArg("variable "+ctx.Scope()+"/"+name,
				"holds shape %s but this layer needs %s (inputs' dtype and dimensions decide it)", v.Shape(), want)
		}
		if v.HasValue() || ctx.IsReuse() || !ctx.IsChecked() {
			return v.ValueGraph(g)
		}
		panicArg("variable "+ctx.Scope()+"/"+name,
			"already created in this graph: two layers share the scope %q (use a different scope, or ctx.Reuse() to share weights)",
			ctx.Scope())
	}
	return ctx.WithInitializer(init).VariableWithShape(name, want).ValueGraph(g)
}

// linearWeightInit returns the initialiser of a weight [out, in] for the given Init.
func linearWeightInit(ctx *context.Context, init Init, out, in int) context.VariableInitializer {
	if init == InitXavierUniform {
		return uniformInit(ctx, XavierBound(in, out))
	}
	return uniformInit(ctx, torchLinearBound(in))
}

// linearBiasInit returns the initialiser of a bias [out] for a weight with fan_in in.
func linearBiasInit(ctx *context.Context, init Init, in int) context.VariableInitializer {
	if init == InitTorchLinear {
		return uniformInit(ctx, torchLinearBound(in))
	}
	return zeroInit
}

// Linear is a fully-connected layer in PyTorch's layout: y = x·Wᵀ + b.
//
//	x: [..., in]   weight W: [out, in]   bias b: [out]   y: [..., out]
//
// The variables are named "weight" and "bias" in ctx's current scope (so `ctx.In("out_proj")`
// gives PyTorch's `out_proj.weight`, `out_proj.bias`). They are created in x's dtype and
// initialised as WithInit chose (default InitXavierUniform: Xavier-uniform weight, zero bias).
func Linear(ctx *context.Context, x *Node, outDim int, useBias bool) *Node {
	init := initOf(ctx)
	return linear(ctx, x, outDim, useBias, linearWeightInit, linearBiasInit, init)
}

// linear is Linear with the initialisers given.
func linear(ctx *context.Context, x *Node, outDim int, useBias bool,
	weightInit func(ctx *context.Context, init Init, out, in int) context.VariableInitializer,
	biasInit func(ctx *context.Context, init Init, in int) context.VariableInitializer, init Init) *Node {
	if x.Rank() < 1 {
		panicArg("x", "shape %s: Linear needs at least rank 1 [..., in]", x.Shape())
	}
	if !x.DType().IsFloat() {
		panicArg("x", "shape %s: Linear needs a float dtype", x.Shape())
	}
	if outDim <= 0 {
		panicArg("outDim", "%d: must be positive", outDim)
	}
	g := x.Graph()
	inDim := x.Shape().Dim(-1)
	w := variable(ctx, g, "weight", x.DType(), []int{outDim, inDim}, weightInit(ctx, init, outDim, inDim)) // [out, in]
	var b *Node
	if useBias {
		b = variable(ctx, g, "bias", x.DType(), []int{outDim}, biasInit(ctx, init, inDim)) // [out]
	}
	return applyLinear(x, w, b)
}

// fewRows is the most rows for which applyLinear computes (W·xᵀ)ᵀ.
const fewRows = 64

// applyLinear computes x·Wᵀ + b for x [..., in], w [out, in], b [out] (or nil): [..., out].
//
// With at most fewRows rows (x's size over its leading axes: a decoding step) it computes
// (W·xᵀ)ᵀ instead: XLA's CPU compiler turns x·Wᵀ + b with one row into a matrix-vector product
// that first copies W transposed, the whole weight per call (a [1, 1, 2048]·[2048, 2048]ᵀ + b
// took 39 ms, the swapped form 0.5 ms, on 2 busy cores; on the pure-Go backend 3.9 → 2.1 ms).
// The transposed result has at most fewRows·out values.
//
// With one row on XLA's CPU backend it adds the bias as y − (−b), which is y + b exactly (IEEE
// 754 defines a − c as a + (−c), and negation is exact). XLA's CPU compiler fuses a
// matrix-vector product (one row) with an Add that consumes it into one kernel of its own (an
// output fusion, kind=kOutput in the optimised HLO), and that kernel runs on one thread where
// the product alone runs on all of them: a [1, 4096]·[8192, 4096]ᵀ product (128 MiB of weight) took
// 3.2–4.1 ms alone and 5.2 ms with the bias added, on two cores (CPU time / wall time 1.8–1.9
// against 1.0). A Sub is not fused that way. The modern suite's decoding step (4 layers, E 2048,
// 32 key/value heads, every projection with a bias) spent 11.5–12.1 ms a step in its
// projections with the fused bias and 8.8 ms in this form.
func applyLinear(x, w, b *Node) *Node {
	var y *Node
	rows := x.Shape().Size() / x.Shape().Dim(-1)
	if rows <= fewRows {
		y = DotGeneral(w, []int{1}, nil, x, []int{x.Rank() - 1}, nil) // [out, ...]
		perm := make([]int, x.Rank())
		for i := range perm {
			perm[i] = (i + 1) % x.Rank()
		}
		y = TransposeAllDims(y, perm...) // [..., out]
	} else {
		y = DotGeneral(x, []int{x.Rank() - 1}, nil, w, []int{1}, nil) // [..., out]
	}
	if b != nil {
		bias := ExpandLeftToRank(b, y.Rank()) // [1, …, 1, out]
		if rows == 1 && OnXLACPU(x.Graph().Backend()) {
			y = Sub(y, Neg(bias)) // [..., out]: y + b, bit for bit (see above)
		} else {
			y = Add(y, bias) // [..., out]
		}
	}
	return y
}
