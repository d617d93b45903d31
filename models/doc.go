// Package models is the home of real pretrained models assembled from mhalib's parts: each
// subpackage reads a published checkpoint (weights, tokenizer, configuration) and builds the
// network from mhalib's layers, so that a reader sees how a model is made of attention blocks.
//
//   - modelfiles: where the setup step puts model files, and their size/sha256 checks.
//   - gguf: the GGUF file format (llama.cpp checkpoints) and its dequantisation.
//   - minilm: sentence-transformers' all-MiniLM-L6-v2 (a 6-layer BERT encoder): tokenizer,
//     encoder, sentence embeddings and attention weights, equal to Hugging Face transformers.
//   - smollm2: SmolLM2-135M-Instruct (a 30-layer Llama decoder with GQA and RoPE) from its
//     GGUF file: byte-level BPE tokenizer, chat template, KV-cached generation, equal to
//     Hugging Face transformers.
//
// Dependencies point one way: models → mhalib → GoMLX; nothing here imports cmd/.
package models
