// Package forward is `mhalab forward`: torch.nn.MultiheadAttention's forward with a PyTorch
// state_dict, on inputs and to outputs in PyTorch's layouts (safetensors files).
package forward

import (
	"context"
	"fmt"
	"slices"
	"sort"

	"github.com/gomlx/gomlx/backends"
	"github.com/gomlx/gomlx/pkg/core/dtypes"
	. "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/tensors"
	mlctx "github.com/gomlx/gomlx/pkg/ml/context"

	"github.com/mhalab/mhalab/internal/cli"
	"github.com/mhalab/mhalab/mhalib"
	"github.com/mhalab/mhalab/torchio"
)

// `mhalab forward` is a public contract (parity/README.md): keep its flags, file names and
// layouts as they are.

// Options are the flags of `mhalab forward`.
type Options struct {
	Weights, Inputs, Out string // safetensors files: the state_dict, query/key/value (+ masks), the result
	Backend              string // "" = the default backend (xla.NewWithReason)
	MaxMemory            uint64 // refuse inputs whose forward pass needs more bytes than this
	Given                cli.Given
	Args
}

// Run checks the flags, refuses an --out that is one of the inputs, reads and checks the files
// (with messages naming the tensor and both shapes), runs the forward pass and writes --out; one
// line about it on io.Out, the backend and any non-finite output on io.Err.
func (o Options) Run(_ context.Context, io cli.IO) error {
	switch {
	case o.Weights == "" || o.Inputs == "" || o.Out == "":
		return cli.Usagef("--weights, --inputs and --out are required")
	case !o.Given["num-heads"]:
		return cli.Usagef("--num-heads is required")
	case o.AverageAttnWeights && !o.NeedWeights:
		return cli.Usagef("--average-attn-weights needs --need-weights")
	case o.NumHeads < 1:
		return fmt.Errorf("--num-heads %d: want a positive number of heads", o.NumHeads)
	case o.MaxMemory == 0:
		return fmt.Errorf("--max-memory 0: want a positive size")
	}
	if err := cli.CheckBackend(o.Backend); err != nil {
		return err
	}
	if err := cli.CheckOutput(cli.FileArg{Flag: "--out", Path: o.Out}, true, cli.FileArg{Flag: "--weights", Path: o.Weights}, cli.FileArg{Flag: "--inputs", Path: o.Inputs}); err != nil {
		return err
	}

	w, err := torchio.ReadFile(o.Weights)
	if err != nil {
		return fmt.Errorf("--weights: %w", err)
	}
	spec, err := torchio.InferMHA(w.Tensors)
	if err != nil {
		return fmt.Errorf("--weights %s: %w", o.Weights, err)
	}
	in, err := torchio.ReadFile(o.Inputs)
	if err != nil {
		return fmt.Errorf("--inputs: %w", err)
	}
	fi, err := CheckInputs(in.Tensors, spec, o.Args)
	if err != nil {
		return fmt.Errorf("--inputs %s: %w", o.Inputs, err)
	}
	if err := checkMemory(fi, spec, o.NumHeads, o.MaxMemory); err != nil {
		return fmt.Errorf("--inputs %s: %w", o.Inputs, err)
	}
	backend, err := cli.NewBackend(o.Backend, io.Err)
	if err != nil {
		return err
	}
	defer backend.Finalize()

	results, err := Forward(backend, w.Tensors, fi, o.Args)
	if err != nil {
		return err
	}
	meta := map[string]string{
		"written_by": "mhalab forward",
		"num_heads":  fmt.Sprint(o.NumHeads),
		"module":     spec.String(),
		"backend":    backend.Name(),
	}
	if err := torchio.WriteFile(o.Out, results, meta); err != nil {
		return fmt.Errorf("--out: %w", err)
	}
	cli.WarnNonFinite(io.Err, "mhalab forward: ", results, "--inputs", in.Tensors)
	names := make([]string, 0, len(results))
	for n := range results {
		names = append(names, n)
	}
	sort.Strings(names)
	fmt.Fprintf(io.Out, "mhalab forward: %s, %d heads → %s:", spec, o.NumHeads, o.Out)
	for _, n := range names {
		fmt.Fprintf(io.Out, " %s %v", n, results[n].Shape().Dimensions)
	}
	fmt.Fprintln(io.Out)
	return nil
}

// checkMemory returns an error when the forward pass on fi would need more than maxMemory bytes
// for its projections, scores and outputs.
func checkMemory(fi *Inputs, spec torchio.MHASpec, heads int, maxMemory uint64) error {
	lk := fi.Lk + 1 // add_bias_kv or add_zero_attn add a key column; counted whether or not
	b, h, e := fi.Batch, heads, spec.EmbedDim
	return cli.CheckMemory(fmt.Sprintf("batch %d, %d queries, %d keys, embed_dim %d, %d heads", b, fi.Lq, fi.Lk, e, h),
		"the forward pass", maxMemory,
		cli.TensorNeed{What: "q, output", Count: 2, Dims: []int{b, fi.Lq, e}},
		cli.TensorNeed{What: "k, v", Count: 2, Dims: []int{b, lk, e}},
		cli.TensorNeed{What: "scores, softmax, weights", Count: 3, Dims: []int{b, h, fi.Lq, lk}})
}

// Args are the arguments of nn.MultiheadAttention.forward that Forward takes.
type Args struct {
	NumHeads           int  // heads (must divide embed_dim)
	BatchFirst         bool // [batch, seq, feature] instead of [seq, batch, feature]
	AddZeroAttn        bool // a zero key/value column
	NeedWeights        bool // also return attn_output_weights
	AverageAttnWeights bool // with NeedWeights: average them over the heads
	IsCausal           bool // the causal mask of is_causal=True, besides any attn_mask
}

// inputNames are the tensors an inputs file may hold.
var inputNames = []string{"query", "key", "value", "attn_mask", "key_padding_mask"}

// Inputs are the checked inputs of one forward pass (CheckInputs).
type Inputs struct {
	query, key, value        *tensors.Tensor
	attnMask, keyPaddingMask *tensors.Tensor // nil when absent
	// Batched: rank-3 inputs; rank 2 is PyTorch's unbatched form.
	Batched bool
	// Batch, Lq, Lk: batch size (1 when unbatched), query and key positions.
	Batch, Lq, Lk int
}

// CheckInputs checks names, dtypes and shapes against the weights and flags, as
// nn.MultiheadAttention.forward would, with messages that name the tensor and both shapes.
func CheckInputs(ts map[string]*tensors.Tensor, spec torchio.MHASpec, o Args) (*Inputs, error) {
	var unknown []string
	for name := range ts {
		if !slices.Contains(inputNames, name) {
			unknown = append(unknown, name)
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		return nil, fmt.Errorf("unknown tensors %v (want query, key, value and optionally attn_mask, key_padding_mask)", unknown)
	}
	for _, name := range []string{"query", "key", "value"} {
		t := ts[name]
		if t == nil {
			return nil, fmt.Errorf("no %s tensor (want query, key, value)", name)
		}
		if t.DType() != dtypes.Float32 {
			return nil, fmt.Errorf("%s has shape %s: want float32", name, t.Shape())
		}
	}
	if spec.DType != dtypes.Float32 {
		return nil, fmt.Errorf("the weights are %s, the inputs float32: save the state_dict in float32 ({k: v.float() for k, v in sd.items()})", spec.DType)
	}
	fi := &Inputs{query: ts["query"], key: ts["key"], value: ts["value"], attnMask: ts["attn_mask"], keyPaddingMask: ts["key_padding_mask"]}
	q, k, v := fi.query.Shape(), fi.key.Shape(), fi.value.Shape()
	if q.Rank() != 3 && q.Rank() != 2 {
		return nil, fmt.Errorf("query has shape %s: want rank 3 (batched) or 2 (unbatched)", q)
	}
	if k.Rank() != q.Rank() || v.Rank() != q.Rank() {
		return nil, fmt.Errorf("query %s, key %s, value %s: all batched (rank 3) or all unbatched (rank 2)", q, k, v)
	}
	fi.Batched = q.Rank() == 3
	layout := "[seq, batch, feature] (no --batch-first)"
	// dims returns (batch, seq, feature) of a tensor in its PyTorch layout.
	dims := func(d []int) (int, int, int) {
		switch {
		case !fi.Batched:
			return 1, d[0], d[1]
		case o.BatchFirst:
			return d[0], d[1], d[2]
		}
		return d[1], d[0], d[2]
	}
	switch {
	case !fi.Batched:
		layout = "[seq, feature] (unbatched)"
	case o.BatchFirst:
		layout = "[batch, seq, feature] (--batch-first)"
	}
	var qf, kb, kf, vb, vl, vf int
	fi.Batch, fi.Lq, qf = dims(q.Dimensions)
	kb, fi.Lk, kf = dims(k.Dimensions)
	vb, vl, vf = dims(v.Dimensions)
	switch {
	case qf != spec.EmbedDim:
		return nil, fmt.Errorf("query has shape %s, laid out as %s: feature %d but the weights have embed_dim %d", q, layout, qf, spec.EmbedDim)
	case kf != spec.KDim:
		return nil, fmt.Errorf("key has shape %s, laid out as %s: feature %d but the weights have kdim %d", k, layout, kf, spec.KDim)
	case vf != spec.VDim:
		return nil, fmt.Errorf("value has shape %s, laid out as %s: feature %d but the weights have vdim %d", v, layout, vf, spec.VDim)
	case kb != fi.Batch || vb != fi.Batch:
		return nil, fmt.Errorf("query %s, key %s, value %s, laid out as %s: batch sizes %d, %d, %d differ", q, k, v, layout, fi.Batch, kb, vb)
	case vl != fi.Lk:
		return nil, fmt.Errorf("key %s, value %s, laid out as %s: key has %d positions, value %d", k, v, layout, fi.Lk, vl)
	case fi.Lq == 0 || fi.Lk == 0 || fi.Batch == 0:
		return nil, fmt.Errorf("query %s, key %s: empty sequence or batch", q, k)
	case spec.EmbedDim%o.NumHeads != 0:
		return nil, fmt.Errorf("--num-heads %d does not divide embed_dim %d", o.NumHeads, spec.EmbedDim)
	}
	maskDType := func(name string, m *tensors.Tensor) error {
		switch m.DType() {
		case dtypes.Bool, dtypes.Uint8, dtypes.Float32:
			return nil
		}
		return fmt.Errorf("%s has shape %s: want bool or uint8 (true = blocked) or float32 (added to the logits)", name, m.Shape())
	}
	if m := fi.attnMask; m != nil {
		if err := maskDType("attn_mask", m); err != nil {
			return nil, err
		}
		d := m.Shape().Dimensions
		ok := (len(d) == 2 && d[0] == fi.Lq && d[1] == fi.Lk) ||
			(len(d) == 3 && d[0] == fi.Batch*o.NumHeads && d[1] == fi.Lq && d[2] == fi.Lk)
		if !ok {
			return nil, fmt.Errorf("attn_mask has shape %s: want [Lq=%d, Lk=%d] or [batch·heads=%d, Lq, Lk]", m.Shape(), fi.Lq, fi.Lk, fi.Batch*o.NumHeads)
		}
	}
	if m := fi.keyPaddingMask; m != nil {
		if err := maskDType("key_padding_mask", m); err != nil {
			return nil, err
		}
		d := m.Shape().Dimensions
		ok := (fi.Batched && len(d) == 2 && d[0] == fi.Batch && d[1] == fi.Lk) || (!fi.Batched && len(d) == 1 && d[0] == fi.Lk)
		if !ok {
			want := fmt.Sprintf("[batch=%d, Lk=%d]", fi.Batch, fi.Lk)
			if !fi.Batched {
				want = fmt.Sprintf("[Lk=%d] (unbatched)", fi.Lk)
			}
			return nil, fmt.Errorf("key_padding_mask has shape %s: want %s", m.Shape(), want)
		}
	}
	return fi, nil
}

// Forward runs mhalib.MultiHeadAttention with the weights on the inputs and returns
// attn_output (and attn_output_weights) in PyTorch's layouts.
func Forward(backend backends.Backend, weights map[string]*tensors.Tensor, fi *Inputs, o Args) (map[string]*tensors.Tensor, error) {
	ctx := mlctx.New()
	if _, err := torchio.LoadMHA(ctx, mhalib.DefaultScope, weights); err != nil {
		return nil, err
	}
	args := []any{fi.query, fi.key, fi.value}
	hasAttn, hasPad := fi.attnMask != nil, fi.keyPaddingMask != nil
	if hasAttn {
		args = append(args, fi.attnMask)
	}
	if hasPad {
		args = append(args, fi.keyPaddingMask)
	}
	exec, err := mlctx.NewExec(backend, ctx, func(ctx *mlctx.Context, inputs []*Node) []*Node {
		q, k, v := inputs[0], inputs[1], inputs[2]
		// To mhalib's [B, L, D].
		toBatchFirst := func(x *Node) *Node {
			switch {
			case !fi.Batched:
				return InsertAxes(x, 0) // [L, D] → [1, L, D]
			case !o.BatchFirst:
				return TransposeAllDims(x, 1, 0, 2) // [L, B, D] → [B, L, D]
			}
			return x
		}
		q, k, v = toBatchFirst(q), toBatchFirst(k), toBatchFirst(v)
		b := mhalib.MultiHeadAttention(ctx, q, k, v, o.NumHeads).AddZeroAttn(o.AddZeroAttn)
		next := 3
		if hasAttn {
			b.AttnMask(torchio.MHAMask(inputs[next])) // [Lq, Lk] or [B·h, Lq, Lk]
			next++
		}
		if hasPad {
			m := inputs[next]
			if !fi.Batched {
				m = InsertAxes(m, 0) // [Lk] → [1, Lk]
			}
			b.KeyPaddingMask(torchio.MHAMask(m))
		}
		if o.IsCausal {
			b.Causal(mhalib.CausalTopLeft)
		}
		var out, w *Node
		if o.NeedWeights {
			out, w = b.DoneWithWeights() // [B, Lq, E], [B, h, Lq, Lk']
			if o.AverageAttnWeights {
				w = ReduceMean(w, 1) // [B, Lq, Lk']
			}
		} else {
			out = b.Done()
		}
		// Back to PyTorch's layout.
		switch {
		case !fi.Batched:
			out = Squeeze(out, 0) // [Lq, E]
			if w != nil {
				w = Squeeze(w, 0) // [Lq, Lk'] or [h, Lq, Lk']
			}
		case !o.BatchFirst:
			out = TransposeAllDims(out, 1, 0, 2) // [Lq, B, E]
		}
		if w != nil {
			return []*Node{out, w}
		}
		return []*Node{out}
	})
	if err != nil {
		return nil, err
	}
	defer exec.Finalize()
	res, err := exec.Exec(args...)
	if err != nil {
		return nil, err
	}
	m := map[string]*tensors.Tensor{"attn_output": res[0]}
	if len(res) > 1 {
		m["attn_output_weights"] = res[1]
	}
	return m, nil
}
