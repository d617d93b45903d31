// Package probe holds what the real models (models/minilm, models/smollm2) share for reading
// and intervening on attention heads: which heads (Head), how to ablate them (Ablation: zero or
// mean), what a traced run returns (Trace: the residual stream per layer, each head's output,
// the attention weights) and the one graph function that applies an ablation (Apply).
//
// # What a head's output is
//
// In a layer with H heads of size dk, head h computes z_h = softmax(q_h·k_hᵀ/√dk)·v_h, one row
// of dk numbers per query position. The heads are concatenated and multiplied by the output
// projection W_O [D, H·dk]: out = Σ_h z_h·W_O[:, h·dk:(h+1)·dk]ᵀ (+ bias). So a head's whole
// effect on the model passes through z_h:
//
//   - zero-ablation sets z_h = 0 — the same as zeroing the columns h·dk … (h+1)·dk−1 of W_O;
//   - mean-ablation sets z_h to its mean over a reference set of inputs (Means), which keeps
//     the head's average contribution and removes only what depends on the input.
//
// # Reading order
//
//   - head.go: Head, Mode, Ablation and its host tensors (Inputs).
//   - apply.go: Apply, the graph side: z [B, H, L, dk] → z with the ablated heads replaced.
//   - trace.go: Array (a float32 array on the host), Trace, MeanHeads.
package probe
