package smollm2

import (
	"fmt"
	"math"

	"github.com/gomlx/gomlx/pkg/core/dtypes"
	. "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/tensors"
	"github.com/gomlx/gomlx/pkg/ml/context"

	"github.com/mhalab/mhalab/models/probe"
)

// ProbeOptions configure Runner.Probe. The zero value runs the plain model and returns the
// log-probability of each next token.
type ProbeOptions struct {
	Ablation probe.Ablation // heads to zero- or mean-ablate (probe.Ablation); none by default
	Trace    bool           // also return the residual stream, every head's output and the attention weights
	Logits   bool           // also return the logits of every position, [B, L, V] (large: V = 49152)
	// Targets[b][t] is the token whose log-probability LogProbs[b][t] gives (same lengths as
	// the ids). Nil: the next token ids[b][t+1], and NaN at the last position.
	Targets [][]int
}

// ProbeOutput is what Probe returns for B sequences padded (after their end) to the longest, L.
type ProbeOutput struct {
	Lengths     []int       // tokens of each sequence
	LogProbs    [][]float32 // [B][Lengths[b]]: log p(Targets[b][t] | ids[b][0…t])
	Logits      probe.Array // [B, L, V], with ProbeOptions.Logits
	probe.Trace             // with ProbeOptions.Trace: Residual [B, L, D] ×(layers+1), Heads [B, H, L, hd], Attention [B, H, L, L]
}

type probeKey struct{ logits, trace bool }

// Probe runs the model over a batch of sequences (no cache), with the heads in o.Ablation
// ablated, and returns each position's log-probability of its target and, as asked, the trace
// and the logits. Sequences of different lengths are padded after their end with token 0: the
// causal mask keeps the padding out of every real position. One graph is compiled per padded
// shape and set of outputs; the ablation is an input, so changing it does not recompile.
func (r *Runner) Probe(ids [][]int, o ProbeOptions) (*ProbeOutput, error) {
	c := r.Model.Config
	if len(ids) == 0 {
		return nil, fmt.Errorf("smollm2: Probe: no sequences")
	}
	if o.Targets != nil && len(o.Targets) != len(ids) {
		return nil, fmt.Errorf("smollm2: Probe: %d target rows for %d sequences", len(o.Targets), len(ids))
	}
	B, L := len(ids), 0
	for b, s := range ids {
		if err := r.checkIDs(s); err != nil {
			return nil, fmt.Errorf("sequence %d: %w", b+1, err)
		}
		if o.Targets != nil {
			if len(o.Targets[b]) != len(s) {
				return nil, fmt.Errorf("smollm2: Probe: sequence %d has %d tokens but %d targets", b+1, len(s), len(o.Targets[b]))
			}
			if err := r.checkIDs(o.Targets[b]); err != nil {
				return nil, fmt.Errorf("targets of sequence %d: %w", b+1, err)
			}
		}
		L = max(L, len(s))
	}
	keep, replace, err := o.Ablation.Inputs(c.NumHiddenLayers, c.NumAttentionHeads, c.HeadDim)
	if err != nil {
		return nil, err
	}
	tok, tgt := make([]int32, B*L), make([]int32, B*L) // [B, L], padding 0
	lengths := make([]int, B)
	for b, s := range ids {
		lengths[b] = len(s)
		for t, id := range s {
			tok[b*L+t] = int32(id)
			switch {
			case o.Targets != nil:
				tgt[b*L+t] = int32(o.Targets[b][t])
			case t+1 < len(s):
				tgt[b*L+t] = int32(s[t+1])
			}
		}
	}
	e, err := r.probeExec(probeKey{o.Logits, o.Trace})
	if err != nil {
		return nil, err
	}
	res, err := e.Exec(tensors.FromFlatDataAndDimensions(tok, B, L), tensors.FromFlatDataAndDimensions(tgt, B, L), keep, replace)
	if err != nil {
		return nil, fmt.Errorf("smollm2: Probe: %w", err)
	}
	return r.probeOutput(res, lengths, o)
}

// probeOutput copies Probe's results to the host: logprobs [B, L], then logits, then the trace.
func (r *Runner) probeOutput(res []*tensors.Tensor, lengths []int, o ProbeOptions) (*ProbeOutput, error) {
	arrays := make([]probe.Array, len(res))
	for i, t := range res {
		a, err := probe.ArrayOf(t)
		if err != nil {
			return nil, err
		}
		arrays[i] = a
	}
	out := &ProbeOutput{Lengths: lengths}
	lp := arrays[0] // [B, L]
	for b, n := range lengths {
		row := append([]float32(nil), lp.Row(b)[:n]...)
		if o.Targets == nil {
			row[n-1] = float32(math.NaN())
		}
		out.LogProbs = append(out.LogProbs, row)
	}
	arrays = arrays[1:]
	if o.Logits {
		out.Logits, arrays = arrays[0], arrays[1:]
	}
	if o.Trace {
		n := r.Model.Config.NumHiddenLayers
		out.Residual, out.Heads, out.Attention = arrays[:n+1], arrays[n+1:2*n+1], arrays[2*n+1:]
	}
	return out, nil
}

// probeExec compiles (once per set of outputs) the probed model: (tokens [B, L] int32, targets
// [B, L] int32, keep [layers, H], replace [layers, H, hd]) → log p(target) [B, L], then the
// logits [B, L, V] if asked, then residual ×(layers+1), heads ×layers, attention ×layers.
func (r *Runner) probeExec(k probeKey) (*context.Exec, error) {
	if e, ok := r.probes[k]; ok {
		return e, nil
	}
	m := r.Model
	e, err := context.NewExec(r.backend, r.ctx, func(ctx *context.Context, in []*Node) []*Node {
		return m.probeGraph(ctx, in[0], in[1], in[2], in[3], k)
	})
	if err != nil {
		return nil, err
	}
	if r.probes == nil {
		r.probes = map[probeKey]*context.Exec{}
	}
	r.probes[k] = e
	return e, nil
}

// probeGraph is Logits with probe.Apply on every layer's heads and the outputs probeExec lists.
func (m *Model) probeGraph(ctx *context.Context, tokens, targets, keep, replace *Node, k probeKey) []*Node {
	p := m.positions(ScalarZero(tokens.Graph(), dtypes.Int32), tokens.Shape().Dim(1))
	x := m.embed(ctx, tokens) // [B, L, D]
	n := m.Config.NumHiddenLayers
	var residual, heads, weights []*Node
	for i := range n {
		residual = append(residual, x)
		var w *Node
		x, w = m.blockWith(ctx, x, p, i, nil, "", func(a *Node) *Node {
			a = probe.Apply(a, keep, replace, i) // [B, H, L, hd]
			heads = append(heads, a)
			return a
		})
		weights = append(weights, w) // [B, H, L, L]
	}
	residual = append(residual, x)
	logits := m.head(ctx, x) // [B, L, V]
	oneHot := OneHot(targets, m.Config.VocabSize, logits.DType())
	out := []*Node{ReduceSum(Mul(LogSoftmax(logits, -1), oneHot), -1)} // [B, L]
	if k.logits {
		out = append(out, logits)
	}
	if k.trace {
		out = append(append(append(out, residual...), heads...), weights...)
	}
	return out
}
