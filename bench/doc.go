// Package bench is mhalab's benchmark harness (`mhalab bench`): one run that times multi-head
// attention side by side on every backend and on PyTorch, and measures what flash attention,
// the KV cache and checkpointing buy.
//
// # Suites
//
//	mha         forward passes of self-attention MultiHeadAttention(x, x, x) on fixed shapes,
//	            plain and flash, causal or not: compile time, median, min, GFLOP/s, ratio to PyTorch
//	torch       the same shapes with nn.MultiheadAttention (parity/bench_torch.py), same thread count
//	products    the four matrix products of one plain pass of each group's shape, each alone, on
//	            every backend: GFLOP/s and the share of the cores' float32 FMA peak (measured at the
//	            start of every run, peak.go), where a pass's time goes before any fusion is blamed
//	decode      tokens/s of greedy decoding with a KV cache vs recomputing the whole sequence
//	minilm      sentences/s of all-MiniLM-L6-v2 sentence embeddings (32 sentences of 12–14 tokens)
//	            on every backend and with transformers on PyTorch (models/minilm/bench_torch.py)
//	smollm2     greedy generation with SmolLM2-135M-Instruct: prefill and decode tokens/s on every
//	            backend, with transformers on PyTorch (models/smollm2/bench_torch.py, same
//	            prompt ids) and, when llama-cpp-python is installed (scripts/setup.sh --only
//	            llama; Config.LlamaPython), with llama.cpp on the same GGUF, its weights kept
//	            quantised (models/smollm2/bench_llama.py); and the KV cache's measured bytes
//	            with 3 vs 9 key/value heads
//	modern      attention of current LLMs: sliding-window flash (L 8192, window 512) vs full causal
//	            flash vs PyTorch (SDPA with the mask, flex_attention with a block mask), and
//	            tokens/s of grouped-query decoding with the KV cache (Hkv 32, 8, 1 of Hq 32)
//	memory      peak RSS of one attention forward pass, plain vs flash, L = 1k … 32k (one process each),
//	            and of one gradient step of a causal pre-LN block, plain vs flash attention, L = 1k,
//	            4k, 16k, with its step, forward and backward times (blockgrad.go)
//	checkpoint  peak RSS of the gradients of N pre-LN blocks with and without checkpointing
//
// PyTorch is timed right before and right after every mhalib case, and each ratio divides by the
// mean of those two medians, so that both sides of a ratio see nearly the same machine load; every
// case also records the process's CPU time per run and the load average. The other anchors follow
// the same rule: llama.cpp (smollm2) runs in rounds alternating with the backends, and PyTorch's
// sliding-window rows (modern) are timed again after each backend's and pooled. Config.ComparePath
// prints each case's change against an earlier run's JSON (compare.go), and each memory
// measurement's peak RSS and run time then and now.
//
// Run writes the results as markdown tables and as JSON (Config.JSONPath). Memory is measured
// in child processes (Config.ChildCommand, which calls RunChild), so that each measurement's
// peak resident set size is its own.
//
// Measured numbers live in the report this package prints, never in its doc comments.
package bench
