// Package gguf reads GGUF files, the single-file format of llama.cpp: a header, typed
// metadata (architecture, hyper-parameters, tokenizer vocabulary and merges, chat template),
// tensor descriptions, and the tensor data, each tensor aligned and possibly quantised.
//
// The layout, from the GGUF specification (ggml's docs/gguf.md), all little-endian:
//
//	magic "GGUF" | version u32 (2 or 3) | tensor_count u64 | kv_count u64
//	kv_count × { key: string | value_type u32 | value }
//	tensor_count × { name: string | n_dims u32 | dims: n_dims × u64 | type u32 | offset u64 }
//	padding to general.alignment (default 32)
//	tensor data: tensor i at data_start + offset_i
//
// A string is a u64 length and that many bytes; an array is an element type u32, a u64 count
// and the elements. dims list the fastest-varying axis first (ggml's ne[0]): a matrix of R rows
// of C columns has dims [C, R]; TensorInfo.Shape gives the row-major shape [R, C].
//
// The reader trusts nothing in the file: every count and length is checked against the bytes
// that remain before anything is allocated (a lying header cannot make it allocate more than a
// small multiple of the file's size), dimensions are checked for overflow, and every tensor's
// bytes must lie inside the file without overlapping another. FuzzParse checks that no input
// makes it panic or allocate more than 64 bytes per input byte (plus 8 MiB); its corpus is kept
// in testdata/fuzz and runs with every go test; README.md records the fuzzing runs. Errors wrap
// ErrFormat and name the file, the key or the tensor.
//
// Tensors of type F32, F16, Q8_0 and Q4_1 dequantise to float32 (TensorFloat32); every other
// type is parsed (its size is known) but reading it is an error naming the tensor and the type.
//
// Why not a library: github.com/gpustack/gguf-parser-go (v0.28.1, served by the Go module
// proxy) parses headers to estimate memory use; it has no dequantisation and depends on HTTP
// clients, an Ollama registry client and gonum. This package is small and holds only the format.
package gguf
