package main

import (
	"flag"
	"fmt"
	"io"
	"slices"
	"sort"

	"github.com/gomlx/gomlx/backends"
	"github.com/gomlx/gomlx/pkg/core/dtypes"
	. "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/tensors"
	"github.com/gomlx/gomlx/pkg/ml/context"

	"github.com/mhalab/mhalab/mhalib"
	"github.com/mhalab/mhalab/torchio"
	"github.com/mhalab/mhalab/xla"
)

// `mhalab forward` is a public contract (parity/README.md): keep its flags, file names and
// layouts as they are.

// forwardOptions are the flags of `mhalab forward`.
type forwardOptions struct {
	weights, inputs, out string
	numHeads             int
	batchFirst           bool
	addZeroAttn          bool
	needWeights          bool
	average              bool
	isCausal             bool
	backend              string
}

// forwardInputNames are the tensors the inputs file may hold.
var forwardInputNames = []string{"query", "key", "value", "attn_mask", "key_padding_mask"}

func runForward(c command, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet(c.name)
	var o forwardOptions
	fs.StringVar(&o.weights, "weights", "", "safetensors file with an nn.MultiheadAttention state_dict (in_proj_weight, ..., out_proj.bias); add_bias_kv, bias and kdim/vdim are read off it")
	fs.StringVar(&o.inputs, "inputs", "", "safetensors file with query, key, value (float32, PyTorch's layout) and optional attn_mask, key_padding_mask (bool/uint8: true = blocked; float32: added)")
	fs.StringVar(&o.out, "out", "", "safetensors file to write: attn_output, and attn_output_weights with --need-weights")
	fs.IntVar(&o.numHeads, "num-heads", 0, "number of heads (must divide embed_dim)")
	fs.BoolVar(&o.batchFirst, "batch-first", false, "inputs and output are [batch, seq, feature] (PyTorch batch_first=True); default [seq, batch, feature]")
	fs.BoolVar(&o.addZeroAttn, "add-zero-attn", false, "append a zero key/value column (PyTorch add_zero_attn=True)")
	fs.BoolVar(&o.needWeights, "need-weights", false, "also write attn_output_weights, per head [batch, heads, Lq, Lk']")
	fs.BoolVar(&o.average, "average-attn-weights", false, "with --need-weights: average the weights over the heads, [batch, Lq, Lk']")
	fs.BoolVar(&o.isCausal, "is-causal", false, "apply the causal mask PyTorch builds for is_causal=True (query i sees keys j <= i), besides any attn_mask")
	fs.StringVar(&o.backend, "backend", "", `go, xla:cpu or xla:cuda (default: $GOMLX_BACKEND, else xla:cpu when its plugin loads, else go)`)
	maxMemory := addMaxMemoryFlag(fs, "the forward pass")
	if err := parseFlags(fs, c, args, stdout); err != nil {
		return err
	}
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	switch {
	case o.weights == "" || o.inputs == "" || o.out == "":
		return usagef("--weights, --inputs and --out are required")
	case !given["num-heads"]:
		return usagef("--num-heads is required")
	case o.average && !o.needWeights:
		return usagef("--average-attn-weights needs --need-weights")
	case o.numHeads < 1:
		return fmt.Errorf("--num-heads %d: want a positive number of heads", o.numHeads)
	case *maxMemory == 0:
		return fmt.Errorf("--max-memory 0: want a positive size")
	}
	if err := xla.CheckSpec(o.backend); err != nil {
		return &usageError{err.Error()}
	}

	w, err := torchio.ReadFile(o.weights)
	if err != nil {
		return fmt.Errorf("--weights: %w", err)
	}
	spec, err := torchio.InferMHA(w.Tensors)
	if err != nil {
		return fmt.Errorf("--weights %s: %w", o.weights, err)
	}
	in, err := torchio.ReadFile(o.inputs)
	if err != nil {
		return fmt.Errorf("--inputs: %w", err)
	}
	fi, err := checkForwardInputs(in.Tensors, spec, o)
	if err != nil {
		return fmt.Errorf("--inputs %s: %w", o.inputs, err)
	}
	if err := fi.checkMemory(spec, o, uint64(*maxMemory)); err != nil {
		return fmt.Errorf("--inputs %s: %w", o.inputs, err)
	}
	backend, reason, err := xla.NewWithReason(o.backend)
	if err != nil {
		return err
	}
	defer backend.Finalize()
	fmt.Fprintf(stderr, "mhalab: backend %s\n", reason)

	results, err := forward(backend, w.Tensors, fi, o)
	if err != nil {
		return err
	}
	meta := map[string]string{
		"written_by": "mhalab forward",
		"num_heads":  fmt.Sprint(o.numHeads),
		"module":     spec.String(),
		"backend":    backend.Name(),
	}
	if err := torchio.WriteFile(o.out, results, meta); err != nil {
		return fmt.Errorf("--out: %w", err)
	}
	names := make([]string, 0, len(results))
	for n := range results {
		names = append(names, n)
	}
	sort.Strings(names)
	fmt.Fprintf(stdout, "mhalab forward: %s, %d heads → %s:", spec, o.numHeads, o.out)
	for _, n := range names {
		fmt.Fprintf(stdout, " %s %v", n, results[n].Shape().Dimensions)
	}
	fmt.Fprintln(stdout)
	return nil
}

// forwardInputs are the checked contents of the inputs file.
type forwardInputs struct {
	query, key, value        *tensors.Tensor
	attnMask, keyPaddingMask *tensors.Tensor // nil when absent
	batched                  bool            // rank-3 inputs; rank 2 is PyTorch's unbatched form
	batch, lq, lk            int
}

// checkForwardInputs checks names, dtypes and shapes against the weights and flags, as
// nn.MultiheadAttention.forward would, with messages that name the tensor and both shapes.
func checkForwardInputs(ts map[string]*tensors.Tensor, spec torchio.MHASpec, o forwardOptions) (*forwardInputs, error) {
	var unknown []string
	for name := range ts {
		if !slices.Contains(forwardInputNames, name) {
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
	fi := &forwardInputs{query: ts["query"], key: ts["key"], value: ts["value"], attnMask: ts["attn_mask"], keyPaddingMask: ts["key_padding_mask"]}
	q, k, v := fi.query.Shape(), fi.key.Shape(), fi.value.Shape()
	if q.Rank() != 3 && q.Rank() != 2 {
		return nil, fmt.Errorf("query has shape %s: want rank 3 (batched) or 2 (unbatched)", q)
	}
	if k.Rank() != q.Rank() || v.Rank() != q.Rank() {
		return nil, fmt.Errorf("query %s, key %s, value %s: all batched (rank 3) or all unbatched (rank 2)", q, k, v)
	}
	fi.batched = q.Rank() == 3
	layout := "[seq, batch, feature] (no --batch-first)"
	// dims returns (batch, seq, feature) of a tensor in its PyTorch layout.
	dims := func(d []int) (int, int, int) {
		switch {
		case !fi.batched:
			return 1, d[0], d[1]
		case o.batchFirst:
			return d[0], d[1], d[2]
		}
		return d[1], d[0], d[2]
	}
	switch {
	case !fi.batched:
		layout = "[seq, feature] (unbatched)"
	case o.batchFirst:
		layout = "[batch, seq, feature] (--batch-first)"
	}
	var qf, kb, kf, vb, vl, vf int
	fi.batch, fi.lq, qf = dims(q.Dimensions)
	kb, fi.lk, kf = dims(k.Dimensions)
	vb, vl, vf = dims(v.Dimensions)
	switch {
	case qf != spec.EmbedDim:
		return nil, fmt.Errorf("query has shape %s, laid out as %s: feature %d but the weights have embed_dim %d", q, layout, qf, spec.EmbedDim)
	case kf != spec.KDim:
		return nil, fmt.Errorf("key has shape %s, laid out as %s: feature %d but the weights have kdim %d", k, layout, kf, spec.KDim)
	case vf != spec.VDim:
		return nil, fmt.Errorf("value has shape %s, laid out as %s: feature %d but the weights have vdim %d", v, layout, vf, spec.VDim)
	case kb != fi.batch || vb != fi.batch:
		return nil, fmt.Errorf("query %s, key %s, value %s, laid out as %s: batch sizes %d, %d, %d differ", q, k, v, layout, fi.batch, kb, vb)
	case vl != fi.lk:
		return nil, fmt.Errorf("key %s, value %s, laid out as %s: key has %d positions, value %d", k, v, layout, fi.lk, vl)
	case fi.lq == 0 || fi.lk == 0 || fi.batch == 0:
		return nil, fmt.Errorf("query %s, key %s: empty sequence or batch", q, k)
	case spec.EmbedDim%o.numHeads != 0:
		return nil, fmt.Errorf("--num-heads %d does not divide embed_dim %d", o.numHeads, spec.EmbedDim)
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
		ok := (len(d) == 2 && d[0] == fi.lq && d[1] == fi.lk) ||
			(len(d) == 3 && d[0] == fi.batch*o.numHeads && d[1] == fi.lq && d[2] == fi.lk)
		if !ok {
			return nil, fmt.Errorf("attn_mask has shape %s: want [Lq=%d, Lk=%d] or [batch·heads=%d, Lq, Lk]", m.Shape(), fi.lq, fi.lk, fi.batch*o.numHeads)
		}
	}
	if m := fi.keyPaddingMask; m != nil {
		if err := maskDType("key_padding_mask", m); err != nil {
			return nil, err
		}
		d := m.Shape().Dimensions
		ok := (fi.batched && len(d) == 2 && d[0] == fi.batch && d[1] == fi.lk) || (!fi.batched && len(d) == 1 && d[0] == fi.lk)
		if !ok {
			want := fmt.Sprintf("[batch=%d, Lk=%d]", fi.batch, fi.lk)
			if !fi.batched {
				want = fmt.Sprintf("[Lk=%d] (unbatched)", fi.lk)
			}
			return nil, fmt.Errorf("key_padding_mask has shape %s: want %s", m.Shape(), want)
		}
	}
	return fi, nil
}

// checkMemory returns an error when the forward pass on fi would need more than maxMemory
// bytes for its projections, scores and outputs.
func (fi *forwardInputs) checkMemory(spec torchio.MHASpec, o forwardOptions, maxMemory uint64) error {
	lk := fi.lk + 1 // add_bias_kv or add_zero_attn add a key column; counted whether or not
	b, h, e := fi.batch, o.numHeads, spec.EmbedDim
	return checkMemory(fmt.Sprintf("batch %d, %d queries, %d keys, embed_dim %d, %d heads", b, fi.lq, fi.lk, e, h),
		"the forward pass", maxMemory,
		tensorNeed{"q, output", 2, []int{b, fi.lq, e}},
		tensorNeed{"k, v", 2, []int{b, lk, e}},
		tensorNeed{"scores, softmax, weights", 3, []int{b, h, fi.lq, lk}})
}

// forward runs mhalib.MultiHeadAttention with the weights on the inputs and returns
// attn_output (and attn_output_weights) in PyTorch's layouts.
func forward(backend backends.Backend, weights map[string]*tensors.Tensor, fi *forwardInputs, o forwardOptions) (map[string]*tensors.Tensor, error) {
	ctx := context.New()
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
	exec, err := context.NewExec(backend, ctx, func(ctx *context.Context, inputs []*Node) []*Node {
		q, k, v := inputs[0], inputs[1], inputs[2]
		// To mhalib's [B, L, D].
		toBatchFirst := func(x *Node) *Node {
			switch {
			case !fi.batched:
				return InsertAxes(x, 0) // [L, D] → [1, L, D]
			case !o.batchFirst:
				return TransposeAllDims(x, 1, 0, 2) // [L, B, D] → [B, L, D]
			}
			return x
		}
		q, k, v = toBatchFirst(q), toBatchFirst(k), toBatchFirst(v)
		b := mhalib.MultiHeadAttention(ctx, q, k, v, o.numHeads).AddZeroAttn(o.addZeroAttn)
		next := 3
		if hasAttn {
			b.AttnMask(torchio.MHAMask(inputs[next])) // [Lq, Lk] or [B·h, Lq, Lk]
			next++
		}
		if hasPad {
			m := inputs[next]
			if !fi.batched {
				m = InsertAxes(m, 0) // [Lk] → [1, Lk]
			}
			b.KeyPaddingMask(torchio.MHAMask(m))
		}
		if o.isCausal {
			b.Causal(mhalib.CausalTopLeft)
		}
		var out, w *Node
		if o.needWeights {
			out, w = b.DoneWithWeights(o.average) // [B, Lq, E], [B, Lq, Lk'] or [B, h, Lq, Lk']
		} else {
			out = b.Done()
		}
		// Back to PyTorch's layout.
		switch {
		case !fi.batched:
			out = Squeeze(out, 0) // [Lq, E]
			if w != nil {
				w = Squeeze(w, 0) // [Lq, Lk'] or [h, Lq, Lk']
			}
		case !o.batchFirst:
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
