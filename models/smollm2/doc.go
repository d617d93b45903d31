// Package smollm2 runs SmolLM2-135M-Instruct (Hugging Face, Apache-2.0) from its GGUF file,
// built from mhalib's parts: a 30-layer Llama decoder with grouped-query attention (9 query
// heads share 3 key/value heads), rotary position embeddings, RMSNorm and a SwiGLU MLP, decoded
// with a KV cache. Its tokenizer (byte-level BPE) and chat template come from the same file.
//
// Reading order:
//
//   - files.go: where scripts/setup.sh (step smollm2) installs the model.
//   - config.go: the hyper-parameters from the GGUF metadata (Hugging Face's names).
//   - weights.go: the tensors, dequantised by models/gguf, under Hugging Face's names; the
//     attn_q/attn_k rows un-permuted (UnpermuteRoPE).
//   - tokenizer.go, pretokenize.go: byte-level BPE, equal to Hugging Face's tokenizer.
//   - chat.go: the ChatML template with its default system prompt.
//   - decoder.go: the network, top-down; session.go: whole-sequence logits and cached decoding;
//     generate.go: greedy decoding and sampling; run.go: `mhalab generate` and `mhalab chat`.
//   - probe.go: Runner.Probe, the model with heads zero- or mean-ablated (models/probe) and its
//     trace: the residual stream per layer, every head's output, the attention weights.
//
// Checked against Hugging Face transformers loading the same file (gen_fixture.py writes the
// fixtures in testdata/): token ids on 330 strings and the chat template; the logits of 14
// prompts against a float64 reference within twice transformers' own float32 error; greedy
// continuations token for token; cached decoding against recomputing the whole sequence.
package smollm2
