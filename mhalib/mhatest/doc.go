// Package mhatest is a plain float64 reference implementation of multi-head
// attention, written with nested loops and the standard library only (no
// GoMLX inside), so that a reader can follow every sum and so that mhalib's
// tests have something independent to compare against.
//
// # Tensors
//
// Tensor is a row-major float64 array with a Shape. Shapes are given in every
// doc comment, e.g. q: [B, h, Lq, dk] with B the batch, h the heads, Lq the
// query length, Lk the key length, E the model width.
//
// # Pieces, in reading order
//
//   - Linear, LayerNorm, XavierBound, KaimingUniformBound (linear.go)
//   - masks as PyTorch defines them, each converted to one additive bias
//     [B, h, Lq, Lk] (mask.go): Mask with the conventions BlockedWhereTrue
//     (nn.MultiheadAttention), AttendWhereTrue (F.scaled_dot_product_attention)
//     and Additive; CausalTopLeft, CausalBottomRight; MaskSpec.Bias
//   - SDPA, scaled dot-product attention (sdpa.go)
//   - MHA, nn.MultiheadAttention's forward, including add_bias_kv,
//     add_zero_attn and uneven heads (mha.go)
//   - PreLNBlock, x + MHA(LN(x)) (block.go)
//   - OnlineSoftmaxAttention, the FlashAttention-2 recurrence (flash.go)
//   - NumGrad and Loss, finite-difference gradients (numgrad.go)
//   - Attention with the options of current LLMs: GQA, soft-cap, ALiBi (ALiBiSlopes), a
//     sliding Window, causal masks and sinks (attention.go); RoPE in both conventions,
//     RoPERotateHalf (Hugging Face's formula) and RMSNorm (rope.go); MLA and MLAAbsorbed,
//     DeepSeek-V2's multi-head latent attention (mla.go)
//
// # Fully masked rows
//
// A query row whose every logit is −Inf gets zero weights and zero output,
// never NaN (the PyTorch ≥ 2.5 F.scaled_dot_product_attention convention,
// and mhalib's). With a finite fill such as −1e9 such a row gets uniform
// weights, as seed 000's masked_fill code does.
//
// # Errors
//
// MHA, PreLNBlock, FromInProj and the mask conversions return errors for
// inconsistent shapes. The lower-level loops (Linear, SDPA, ...) are meant to
// be called with checked shapes and panic with an error value otherwise.
package mhatest
