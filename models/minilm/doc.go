// Package minilm is sentence-transformers' all-MiniLM-L6-v2 — a 6-layer BERT encoder — built
// from mhalib's parts and loaded from the published checkpoint: it tokenises sentences, runs
// the encoder, and returns sentence embeddings (mean pooling + L2 normalisation) and the
// attention weights of every layer and head, with Hugging Face transformers' numbers.
//
// # Reading order
//
//   - files.go: where the model lives (scripts/setup.sh, step minilm) and its pinned files.
//   - config.go: Config, config.json with BERT's field names.
//   - tokenizer.go: Tokenizer, WordPiece from tokenizer.json (github.com/sugarme/tokenizer),
//     NFD first, padding and truncation off; Truncate.
//   - weights.go: the checkpoint's names → variables; BERT's attention.self.query/key/value and
//     attention.output.dense become mhalib.MultiHeadAttention's q/k/v_proj_weight,
//     in_proj_bias and out_proj through mhalib.LoadStateDict.
//   - embeddings.go: word + position + token-type embeddings, then LayerNorm.
//   - layer.go: one post-LN encoder layer: LN(x + MHA(x)), then LN(x + FFN(x)), FFN = GELU MLP.
//   - encoder.go: the stack, padding masks, mean pooling and L2 normalisation.
//   - model.go: Model, Load, Embed, Attention — the host-side API (errors, batches).
//   - probe.go: Model.Probe, the encoder with heads zero- or mean-ablated (models/probe) and its
//     trace: the residual stream per layer, every head's output, the attention weights.
//
// # The architecture
//
//	ids [B, L] → embeddings [B, L, 384] → 6 × layer → hidden [B, L, 384]
//	layer:  a = MHA(x) with 12 heads of 32, keys masked where padding
//	        x = LayerNorm(x + a)                          (post-LN, eps 1e-12)
//	        x = LayerNorm(x + W₂·GELU(W₁·x + b₁) + b₂)    (384 → 1536 → 384)
//	sentence embedding = normalize(Σ_valid hidden / n_valid)
package minilm
