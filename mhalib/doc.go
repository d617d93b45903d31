// Package mhalib is multi-head attention written to be read: each concept in its own file,
// every reshape commented with its shape, and exactly PyTorch's semantics, so that the same
// weights give the same numbers as torch.nn.MultiheadAttention and
// torch.nn.functional.scaled_dot_product_attention.
//
// It is built on GoMLX's core graph ops (github.com/gomlx/gomlx/pkg/core/graph) and keeps its
// weights in a GoMLX context (github.com/gomlx/gomlx/pkg/ml/context). Tensors are batch-first:
// query [B, Lq, E], key [B, Lk, kdim], value [B, Lk, vdim].
//
// # Reading order
//
//   - linear.go: Linear, y = x·Wᵀ + b in PyTorch's layout, and the initialisers (Init, WithInit,
//     XavierBound).
//   - projection.go: the query/key/value and output projections, fused (in_proj_weight [3E, E])
//     or separate, with PyTorch's variable names.
//   - heads.go: SplitHeads / MergeHeads, and uneven heads (HeadSizesFor, SplitUnevenHeads,
//     MergeUnevenHeads, HeadStrategy).
//   - mask.go: Mask with the convention in its name (MaskBlockedWhereTrue, MaskAttendWhereTrue,
//     MaskAdditive), Causal, fill values.
//   - options.go: AttentionOptions, the options every attention builder shares (see Vocabulary).
//   - sdpa.go: ScaledDotProductAttention, softmax(q·kᵀ/√dk + mask)·v.
//   - mha.go: MultiHeadAttention, the nn.MultiheadAttention equivalent.
//   - program.go: Program, MultiHeadAttention compiled once per shape and Run many times on host
//     tensors; Forward, the one-call convenience built on it.
//   - block.go: PreLNBlock, x + Dropout(MHA(LayerNorm(x))).
//   - statedict.go: LoadStateDict / StateDict, PyTorch state_dict ↔ variables.
//   - flash.go: FlashAttention, the FlashAttention-2 forward pass block by block (online softmax,
//     causal tiles skipped, log-sum-exp), and MultiHeadAttention's Formulation(Flash).
//   - auto.go: the default Formulation(Auto), plain or flash attention chosen by shape (and by
//     memory on a GPU), and
//     Flash's block sizes by shape.
//   - memory.go: what plain attention's scores cost, and its refusal up front above a fixed
//     limit (PlainAttentionBytes, DefaultMaxAttentionBytes, SetMaxAttentionBytes, MemoryError).
//   - kvcache.go: KVCache, CachedSelfAttention for decoding, and StepCache, what a decoding step
//     needs of a cache (KVCache and WindowedKVCache are both one).
//
// Attention in today's LLMs (Llama 3, Qwen 3, Gemma 2/3, SmolLM2, DeepSeek-V2, gpt-oss), each an
// option of every attention builder (options.go) or a piece of its own:
//
//   - gqa.go: grouped-query / multi-query attention (EnableGQA), k and v never repeated.
//   - window.go: sliding-window attention (Window, Alignment); flash skips the tiles outside it;
//     flashtiles.go: FlashTiles, the tiles FlashAttention computes (its schedule, for pictures).
//   - alibi.go: ALiBiSlopes and the ALiBi option; SoftCap and Sinks live in options.go.
//   - rope.go: RoPE, half-split and interleaved, base θ, partial rotary dims, positions.
//   - qknorm.go: RMSNorm and QKNorm.
//   - mla.go: MultiHeadLatentAttention (DeepSeek-V2), explicit and absorbed, with a latent cache.
//   - KVCache takes GQA queries and MultiHeadAttention / CachedSelfAttention a number of
//     KVHeads; kvwindow.go: WindowedKVCache, a ring of left+1 slots for sliding-window decoding.
//
// # Around the core: sub-packages
//
// Each imports mhalib and GoMLX only; mhalib imports none of them.
//
//   - mhalib/decode: Decoder, a small GPT-style model, and Session, greedy decoding with any
//     StepCache.
//   - mhalib/train: VariableGradients, and CheckpointStack, gradient checkpointing of a stack of
//     blocks.
//   - mhalib/inspect: CheckRowsSumToOne, AttentionRowStats, HeadDiversity, GradientReport,
//     CheckGradients, FirstNonFinite — checks on host tensors.
//   - mhalib/kvcatalog: Bytes and Published, what a KV cache costs, for published models.
//   - mhalib/dotgrad: the gradient of DotGeneral as two DotGenerals (GoMLX v0.26's rule builds
//     outer products), installed for the whole process by dotgrad.Install — the one package of
//     mhalab that changes GoMLX's table of gradients.
//   - mhalib/mhatest: float64 reference implementations for tests (standard library only).
//
// # Vocabulary
//
// Every attention builder — ScaledDotProductAttention, FlashAttention, MultiHeadAttention,
// PreLNBlock — embeds AttentionOptions, so one option has one name, one meaning and one
// implementation everywhere:
//
//	AttnMask(m)            attention mask (PyTorch attn_mask), a Mask: MaskBlockedWhereTrue,
//	                       MaskAttendWhereTrue or MaskAdditive
//	KeyPaddingMask(m)      [B, Lk] padded keys (PyTorch key_padding_mask)
//	Causal(c)              NoCausal, CausalTopLeft, CausalBottomRight (also MLA's Causal)
//	Scale(s), Fill(v)      logit scale (default 1/√dk), logit of blocked pairs (FillNegInf(), FillMinus1e9)
//	Dropout(ctx, rate)     dropout of the weights when ctx is training (Flash refuses it)
//	Window, ALiBi, SoftCap, Sinks   options of current LLMs
//
// Builders end in Done, which returns the output; DoneWithWeights (ScaledDotProductAttention,
// MultiHeadAttention) also returns the weights of every head [B, h, Lq, Lk], DoneWithLSE
// (FlashAttention) the log-sum-exp. EnableGQA belongs to ScaledDotProductAttention and
// FlashAttention, whose k and v come with their heads; MultiHeadAttention sets KVHeads.
//
// # Global state
//
// Importing mhalib changes nothing outside it. Two settings are process-wide, and set only when
// a program asks: mhalib/dotgrad's Install (GoMLX's table of gradients has no other scope) and
// SetMaxAttentionBytes (the limit of plain attention's memory).
//
// # Fully masked rows
//
// A query whose every key is masked (with the default −Inf fill) gets zero attention weights,
// zero attention output (so out_proj's bias after projection) and zero gradient — never NaN.
// This is what PyTorch ≥ 2.5's scaled_dot_product_attention does; nn.MultiheadAttention's
// explicit path returns NaN there. With Fill(FillMinus1e9) such a row gets uniform weights, as
// masked_fill(−1e9) code does.
//
// # Errors
//
// Graph-building functions follow GoMLX: they panic on bad input — always with an error value
// (*ArgumentError, wrapping ErrInvalidArgument), whose message names the argument and the shapes.
// GoMLX's Exec turns such a panic into a returned error, and so do Program.Run, Forward, Try and
// the host-side functions (LoadStateDict, inspect.CheckRowsSumToOne, inspect.FirstNonFinite, ...).
// Try re-panics runtime errors (index out of range, nil dereference): they are bugs, not bad input.
//
// # Gradients on every backend
//
// The pure-Go backend cannot differentiate Slice or Concatenate (their gradients need Pad). mhalib
// slices and joins tensors only through take.go, which uses Slice and Concatenate where the
// backend can differentiate them and Gather (whose gradient, ScatterSum, every backend has) with
// Where elsewhere. So gradients of every option work on the pure-Go backend and on XLA.
package mhalib
