package parity

import (
	"fmt"
	"strings"
	"sync"

	"github.com/gomlx/gomlx/backends"
	"github.com/gomlx/gomlx/pkg/core/dtypes"
	. "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/tensors"
	"github.com/gomlx/gomlx/pkg/ml/context"

	"github.com/mhalab/mhalab/mhalib"
	"github.com/mhalab/mhalab/mhalib/train"
	"github.com/mhalab/mhalab/torchio"
)

// Run computes with mhalib, on backend, everything the reference holds a float64 result for:
// "attn_output", "attn_output_weights" (when PyTorch returned them), "grad.query", "grad.key",
// "grad.value" (the inputs that were differentiated) and "grad.param.<name>" for every
// parameter, with loss = Σ attn_output ⊙ input.cotangent, from the reference's parameters and
// inputs, in PyTorch's layouts.
func Run(backend backends.Backend, ref *Reference) (map[string]*tensors.Tensor, error) {
	r := NewRunner(backend, 0)
	defer r.Close()
	return r.Run(ref)
}

// Runner is Run for many references on one backend: a reference with the same structure as an
// earlier one (Reference.StructureKey: the same case but for its values) runs the graph compiled
// for that one, with its own parameters and inputs. Compiling is nearly all the cost of a small
// case on XLA (~0.3 s of CPU per random configuration on the 2-core VM; the pure-Go backend
// compiles in milliseconds), which is what the soak's structure pool saves (parity/README.md).
// A Runner is safe for concurrent use; Close releases its graphs.
type Runner struct {
	backend backends.Backend
	max     int
	mu      sync.Mutex
	graphs  map[string]*runnerGraph
	reused  int
}

// runnerGraph is one compiled structure: its context (whose variables take each reference's
// parameters in turn), its executable and the names of its outputs.
type runnerGraph struct {
	ctx   *context.Context
	exec  *context.Exec
	where []string // where[j] is the result name of output j, set when the graph is built
	runs  int
}

// NewRunner returns a Runner that keeps at most max compiled graphs (0: none kept).
func NewRunner(backend backends.Backend, max int) *Runner {
	return &Runner{backend: backend, max: max, graphs: map[string]*runnerGraph{}}
}

// Close releases the compiled graphs.
func (r *Runner) Close() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for k, g := range r.graphs {
		g.exec.Finalize()
		delete(r.graphs, k)
	}
}

// Reused is how many references ran a graph compiled for an earlier one.
func (r *Runner) Reused() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.reused
}

// Run is the package's Run on the Runner's backend.
func (r *Runner) Run(ref *Reference) (map[string]*tensors.Tensor, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	key := ref.StructureKey()
	g := r.graphs[key]
	if g == nil {
		g = &runnerGraph{ctx: context.New()}
	}
	cg, err := prepareCase(g.ctx.In(caseScope(0)), ref)
	if err != nil {
		return nil, err
	}
	if g.exec == nil {
		fn := func(ctx *context.Context, inputs []*Node) []*Node {
			names, outputs, loss, diff := cg.build(ctx.In(caseScope(0)), inputs)
			g.where = names
			outputs = append(outputs, Gradient(loss, diff...)...)
			for _, n := range cg.diffNames {
				g.where = append(g.where, "grad."+n)
			}
			varNames, varGrads := train.VariableGradients(ctx, loss)
			for i, vn := range varNames {
				name := strings.TrimPrefix(vn, "/"+caseScope(0)+cg.scopePrefix)
				g.where = append(g.where, "grad.param."+strings.ReplaceAll(name, "/", "."))
				outputs = append(outputs, varGrads[i])
			}
			return outputs
		}
		if g.exec, err = context.NewExec(r.backend, g.ctx, fn); err != nil {
			return nil, err
		}
	}
	results, err := g.exec.Exec(cg.args...)
	if err != nil {
		g.exec.Finalize()
		delete(r.graphs, key)
		return nil, fmt.Errorf("parity: %s: %w", ref.Config.Name, err)
	}
	if len(results) != len(g.where) {
		return nil, fmt.Errorf("parity: %s: %d results for %d names", ref.Config.Name, len(results), len(g.where))
	}
	if g.runs++; g.runs > 1 {
		r.reused++
	}
	if r.graphs[key] == nil && r.max > 0 {
		if len(r.graphs) >= r.max {
			for k, old := range r.graphs { // make room: drop every graph kept so far
				old.exec.Finalize()
				delete(r.graphs, k)
			}
		}
		r.graphs[key] = g
	} else if r.max == 0 {
		g.exec.Finalize()
	}
	m := make(map[string]*tensors.Tensor, len(results))
	for j, n := range g.where {
		m[n] = results[j]
	}
	return m, nil
}

func caseScope(i int) string { return fmt.Sprintf("case%d", i) }

// caseGraph is one reference's part of a RunBatch graph.
type caseGraph struct {
	ref         *Reference
	scopePrefix string   // the parameters' scope below the case's, e.g. "/MultiHeadAttention/"
	diffNames   []string // differentiated inputs: query, key, value (those present)
	maskNames   []string // mask inputs
	args        []any    // the graph inputs: diffNames, then maskNames, then the cotangent
}

// prepareCase loads the reference's parameters into ctx (the case's scope) and lists its inputs.
func prepareCase(ctx *context.Context, ref *Reference) (*caseGraph, error) {
	c := ref.Config
	// Every tensor is cloned: a tensor used by one backend cannot be used by another.
	local := func(t *tensors.Tensor) *tensors.Tensor {
		if t == nil {
			return nil
		}
		cl, err := t.LocalClone()
		if err != nil {
			panic(err)
		}
		return cl
	}
	params := ref.Params()
	for k, v := range params {
		params[k] = local(v)
	}
	cg := &caseGraph{ref: ref}
	switch c.Kind {
	case "mha", "seed000", "seed001", "seed003":
		cg.scopePrefix = "/" + mhalib.DefaultScope + "/"
		if err := mhalib.LoadStateDict(ctx, mhalib.DefaultScope, params); err != nil {
			return nil, err
		}
	case "seed003blk":
		cg.scopePrefix = "/"
		attn := map[string]*tensors.Tensor{}
		for k, v := range params {
			switch {
			case strings.HasPrefix(k, "attn."):
				attn[strings.TrimPrefix(k, "attn.")] = v
			case k == "norm.weight" || k == "norm.bias":
				name := strings.TrimPrefix(k, "norm.")
				if nv := ctx.In("norm").GetVariableByScopeAndName(ctx.In("norm").Scope(), name); nv != nil {
					if err := nv.SetValue(v); err != nil {
						return nil, err
					}
				} else if err := mhalib.Try(func() { ctx.In("norm").VariableWithValue(name, v) }); err != nil {
					return nil, err
				}
			default:
				return nil, fmt.Errorf("parity: %s: unexpected parameter %q", c.Name, k)
			}
		}
		if err := mhalib.LoadStateDict(ctx, "attn", attn); err != nil {
			return nil, err
		}
	case "sdpa":
		if len(params) > 0 {
			return nil, fmt.Errorf("parity: %s: SDPA has no parameters, the file has %d", c.Name, len(params))
		}
	default:
		return nil, fmt.Errorf("parity: %s: unknown kind %q", c.Name, c.Kind)
	}
	for _, n := range []string{"query", "key", "value"} {
		if ref.Tensors["input."+n] != nil {
			cg.diffNames = append(cg.diffNames, n)
		}
	}
	for _, n := range []string{"attn_mask", "key_padding_mask", "mask"} {
		if ref.Tensors["input."+n] != nil {
			cg.maskNames = append(cg.maskNames, n)
		}
	}
	for _, n := range cg.diffNames {
		cg.args = append(cg.args, local(ref.Tensors["input."+n]))
	}
	for _, n := range cg.maskNames {
		cg.args = append(cg.args, local(ref.Tensors["input."+n]))
	}
	cot := local(ref.Tensors["input.cotangent"])
	if cot == nil {
		return nil, fmt.Errorf("parity: %s: no input.cotangent", c.Name)
	}
	cg.args = append(cg.args, cot)
	return cg, nil
}

// build builds the case from its inputs (in args' order): the forward results and their
// names, the loss Σ attn_output ⊙ cotangent, and the differentiated input nodes.
func (cg *caseGraph) build(ctx *context.Context, inputs []*Node) (names []string, fwd []*Node, loss *Node, diff []*Node) {
	in := map[string]*Node{}
	for i, n := range cg.diffNames {
		in[n] = inputs[i]
		diff = append(diff, inputs[i])
	}
	masks := map[string]*Node{}
	for i, n := range cg.maskNames {
		masks[n] = inputs[len(cg.diffNames)+i]
	}
	out, weights := build(ctx, cg.ref.Config, in, masks)
	loss = ReduceAllSum(Mul(out, inputs[len(inputs)-1]))
	names, fwd = []string{"attn_output"}, []*Node{out}
	if weights != nil {
		names, fwd = append(names, "attn_output_weights"), append(fwd, weights)
	}
	return names, fwd, loss, diff
}

// build is the mhalib graph of one case: in holds query/key/value in PyTorch's layout, masks the
// mask inputs; it returns the output in PyTorch's layout and the attention weights when the
// reference has them (nil otherwise).
func build(ctx *context.Context, c Config, in, masks map[string]*Node) (out, weights *Node) {
	switch c.Kind {
	case "mha":
		q, k, v := in["query"], in["key"], in["value"]
		if !c.BatchFirst { // [L, B, E] → [B, L, E]
			q, k, v = TransposeAllDims(q, 1, 0, 2), TransposeAllDims(k, 1, 0, 2), TransposeAllDims(v, 1, 0, 2)
		}
		b := mhalib.MultiHeadAttention(ctx, q, k, v, c.H).AddZeroAttn(c.AddZeroAttn)
		if m := masks["attn_mask"]; m != nil {
			b.AttnMask(torchio.MHAMask(m))
		}
		if m := masks["key_padding_mask"]; m != nil {
			b.KeyPaddingMask(torchio.MHAMask(m))
		}
		if c.IsCausal {
			b.Causal(mhalib.CausalTopLeft)
		}
		if c.NeedWeights {
			out, weights = b.DoneWithWeights() // [B, Lq, E], [B, h, Lq, Lk']
			if c.AverageAttnWeights {
				weights = ReduceMean(weights, 1) // [B, Lq, Lk']
			}
		} else {
			out = b.Done()
		}
		if !c.BatchFirst {
			out = TransposeAllDims(out, 1, 0, 2) // [B, Lq, E] → [Lq, B, E]
		}
		return out, weights
	case "sdpa":
		b := mhalib.ScaledDotProductAttention(in["query"], in["key"], in["value"])
		if m := masks["attn_mask"]; m != nil {
			if m.DType() == dtypes.Bool {
				b.AttnMask(mhalib.MaskAttendWhereTrue(m)) // SDPA's bool masks: true = attend
			} else {
				b.AttnMask(mhalib.MaskAdditive(m))
			}
		}
		if c.IsCausal {
			b.Causal(mhalib.CausalTopLeft)
		}
		if c.Scale != nil {
			b.Scale(*c.Scale)
		}
		return b.Done(), nil
	case "seed000":
		b := mhalib.MultiHeadAttention(ctx, in["query"], in["key"], in["value"], c.H).Fill(mhalib.FillMinus1e9)
		if m := masks["mask"]; m != nil {
			// [B, 1, Lk] (padding) or [B, Lq, Lk] (subsequent), 1 = attend; the module unsqueezes
			// a head axis: [B, 1, 1|Lq, Lk].
			dims := m.Shape().Dimensions
			m = Reshape(m, dims[0], 1, dims[1], dims[2])
			m = BroadcastToDims(m, c.B, 1, c.Lq, c.Lk)
			b.AttnMask(mhalib.MaskAttendWhereTrue(m))
		}
		return b.DoneWithWeights()
	case "seed001", "seed003":
		x := in["query"] // self-attention: query = key = value = x
		var b *mhalib.MHABuilder
		if c.Kind == "seed001" {
			b = mhalib.MultiHeadAttention(ctx, x, x, x, len(c.HeadSizes)).HeadSizes(c.HeadSizes...)
		} else {
			b = mhalib.MultiHeadAttention(ctx, x, x, x, c.H)
		}
		if m := masks["mask"]; m != nil {
			b.AttnMask(mhalib.MaskAttendWhereTrue(m)) // [L, L], 1 = attend
		}
		return b.Done(), nil
	case "seed003blk":
		b := mhalib.PreLNBlock(ctx, in["query"], c.H)
		if m := masks["mask"]; m != nil {
			b.AttnMask(mhalib.MaskAttendWhereTrue(m))
		}
		return b.Done(), nil
	}
	panic(fmt.Errorf("parity: unknown kind %q", c.Kind))
}
