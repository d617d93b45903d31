package minilm

import (
	"errors"
	"fmt"

	"github.com/gomlx/gomlx/backends"
	. "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/ml/context"
	"github.com/mhalab/mhalab/mhalib"
	"github.com/mhalab/mhalab/models/probe"
)

// ProbeOptions configure Model.Probe. The zero value runs the plain model.
type ProbeOptions struct {
	Ablation probe.Ablation // heads to zero- or mean-ablate; none by default
	Trace    bool           // also return the residual stream, every head's output and the attention weights
	// PadTo pads the batch to at least PadTo positions (at most the model's): a caller that
	// rounds it up to a few bucket sizes compiles one program per bucket, not one per length.
	PadTo int
}

// ProbeOutput is what Probe returns for B sentences padded to the longest (or PadTo), L tokens.
type ProbeOutput struct {
	Lengths     []int       // tokens of each sentence ([CLS] and [SEP] included)
	Embeddings  [][]float32 // [B][E], as Run's, with the ablation applied
	probe.Trace             // with ProbeOptions.Trace: Residual [B, L, E] ×(layers+1), Heads [B, h, L, dk], Attention [B, h, L, L]
}

type probeKey struct {
	backend backends.Backend
	trace   bool
}

// Probe runs the encoder on one padded batch with the heads in o.Ablation ablated (their
// outputs replaced before each layer's output projection, probe.Apply) and returns the sentence
// embeddings and, with o.Trace, the trace. The attention is computed head by head in the open
// (probeAttention), not by mhalib.MultiHeadAttention; without ablation it gives Run's numbers.
// The ablation is a graph input: changing it does not recompile.
func (m *Model) Probe(backend backends.Backend, encs []Encoding, o ProbeOptions) (*ProbeOutput, error) {
	if backend == nil {
		return nil, errors.New("minilm: Probe: backend is nil")
	}
	if len(encs) == 0 {
		return nil, errors.New("minilm: Probe: no sentences")
	}
	c := m.Config
	keep, replace, err := o.Ablation.Inputs(c.NumHiddenLayers, c.NumAttentionHeads, c.HiddenSize/c.NumAttentionHeads)
	if err != nil {
		return nil, err
	}
	ids, valid, err := m.pad(encs, o.PadTo) // [B, L] ×2
	if err != nil {
		return nil, err
	}
	e, err := m.probeExec(probeKey{backend, o.Trace})
	if err != nil {
		return nil, err
	}
	res, err := e.Exec(ids, valid, keep, replace)
	if err != nil {
		return nil, fmt.Errorf("minilm: Probe: %w", err)
	}
	arrays := make([]probe.Array, len(res))
	for i, t := range res {
		if arrays[i], err = probe.ArrayOf(t); err != nil {
			return nil, err
		}
	}
	out := &ProbeOutput{}
	for b, enc := range encs {
		out.Lengths = append(out.Lengths, enc.Len())
		out.Embeddings = append(out.Embeddings, arrays[0].Row(b))
	}
	if o.Trace {
		n := c.NumHiddenLayers
		out.Residual, out.Heads, out.Attention = arrays[1:n+2], arrays[n+2:2*n+2], arrays[2*n+2:]
	}
	return out, nil
}

// probeExec compiles (once per backend and set of outputs) the probed encoder: (ids [B, L]
// int32, valid [B, L] bool, keep [layers, h], replace [layers, h, dk]) → embeddings [B, E],
// then with trace: residual ×(layers+1), heads ×layers, attention ×layers.
func (m *Model) probeExec(k probeKey) (*context.Exec, error) {
	if e, ok := m.probes[k]; ok {
		return e, nil
	}
	ctx, err := m.Context(k.backend)
	if err != nil {
		return nil, err
	}
	c := m.Config
	e, err := context.NewExec(k.backend, ctx, func(ctx *context.Context, in []*Node) []*Node {
		ids, valid, keep, replace := in[0], in[1], in[2], in[3]
		var heads []*Node
		hidden, weights := encode(ctx, c, ids, valid, true, func(layer int, z *Node) *Node {
			z = probe.Apply(z, keep, replace, layer) // [B, h, L, dk]
			heads = append(heads, z)
			return z
		})
		out := []*Node{NormalizeL2(MeanPooling(hidden[len(hidden)-1], valid))} // [B, E]
		if k.trace {
			out = append(append(append(out, hidden...), heads...), weights...)
		}
		return out
	})
	if err != nil {
		return nil, fmt.Errorf("minilm: %w", err)
	}
	e.SetMaxCache(64)
	if m.probes == nil {
		m.probes = map[probeKey]*context.Exec{}
	}
	m.probes[k] = e
	return e, nil
}

// probeAttention is the layer's multi-head attention written out, with heads applied to the
// heads' outputs (ctx: the layer's attention scope, holding mhalib.MultiHeadAttention's
// variables as LoadStateDict named them):
//
//	q, k, v = x·W_qᵀ + b_q, …   split into h heads      [B, h, L, dk]
//	z = softmax(q·kᵀ/√dk + padding)·v                   [B, h, L, dk]
//	a = merge(heads(z))·W_oᵀ + b_o                      [B, L, E]
//
// x: [B, L, E], valid: [B, L] bool → a [B, L, E] and the weights [B, h, L, L].
func probeAttention(ctx *context.Context, c Config, x, valid *Node, heads func(z *Node) *Node) (a, weights *Node) {
	g := x.Graph()
	E, h := c.HiddenSize, c.NumAttentionHeads
	bias := weight(ctx, g, mhalib.VarInProjBias) // [3E]: b_q, b_k, b_v
	proj := func(name string, part int) *Node {
		y := DotGeneral(x, []int{2}, nil, weight(ctx, g, name), []int{1}, nil) // [B, L, E]
		b := Slice(bias, AxisRange(part*E, (part+1)*E))                        // [E]
		return mhalib.SplitHeads(Add(y, Reshape(b, 1, 1, E)), h)               // [B, h, L, dk]
	}
	q, k, v := proj(mhalib.VarQProjWeight, 0), proj(mhalib.VarKProjWeight, 1), proj(mhalib.VarVProjWeight, 2)
	z, weights := mhalib.ScaledDotProductAttention(q, k, v).KeyPaddingMask(mhalib.MaskAttendWhereTrue(valid)).DoneWithWeights() // [B, h, L, dk], [B, h, L, L]
	merged := mhalib.MergeHeads(heads(z))                                                                                       // [B, L, E]
	out := ctx.In(mhalib.ScopeOutProj)
	y := DotGeneral(merged, []int{2}, nil, weight(out, g, "weight"), []int{1}, nil) // [B, L, E]
	return Add(y, Reshape(weight(out, g, "bias"), 1, 1, E)), weights
}
