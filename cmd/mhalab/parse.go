package main

import (
	"flag"
	"io"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/mhalab/mhalab/bench"
	"github.com/mhalab/mhalab/internal/cli"
	"github.com/mhalab/mhalab/internal/commands/attention"
	"github.com/mhalab/mhalab/internal/commands/backends"
	benchcmd "github.com/mhalab/mhalab/internal/commands/bench"
	"github.com/mhalab/mhalab/internal/commands/chat"
	"github.com/mhalab/mhalab/internal/commands/demo"
	"github.com/mhalab/mhalab/internal/commands/embed"
	"github.com/mhalab/mhalab/internal/commands/explore"
	"github.com/mhalab/mhalab/internal/commands/forward"
	"github.com/mhalab/mhalab/internal/commands/generate"
	"github.com/mhalab/mhalab/internal/commands/hlo"
	"github.com/mhalab/mhalab/internal/commands/sdpa"
	"github.com/mhalab/mhalab/models/smollm2"
	"github.com/mhalab/mhalab/xla"
)

// The flags of each command, filling its options (the command's package checks them and runs).
// `mhalab forward`, `mhalab sdpa`, `mhalab generate` and `mhalab chat` are public contracts
// (parity/README.md, issues 13 and 15): keep their flags as they are.

// backendHelp is the help of --backend for the commands that print "backend: " before it.
const backendHelp = cli.BackendHelp

// backendHelpShort is the help of --backend for forward, sdpa, generate and chat.
const backendHelpShort = `go, xla:cpu or xla:cuda (default: $GOMLX_BACKEND, else xla:cpu when its plugin loads, else go)`

func parseBackends(c command, args []string, stdout io.Writer) (runner, error) {
	fs := newFlagSet(c.name)
	return backends.Options{}, parseFlags(fs, c, args, stdout)
}

func parseDemo(c command, args []string, stdout io.Writer) (runner, error) {
	fs := newFlagSet(c.name)
	var o demo.Options
	fs.StringVar(&o.Backend, "backend", "", backendHelp)
	fs.IntVar(&o.Runs, "runs", 10, "timed runs (the median is reported)")
	fs.IntVar(&o.Batch, "batch", 32, "batch size B")
	fs.IntVar(&o.Seq, "seq", 128, "sequence length L")
	fs.IntVar(&o.DModel, "dmodel", 512, "model (embedding) dimension E")
	fs.IntVar(&o.Heads, "heads", 8, "number of heads h (must divide E)")
	fs.Uint64Var(&o.Seed, "seed", 1, "seed of the input and of the weight initialisation")
	maxMemoryVar(fs, &o.MaxMemory, "the forward pass")
	return o, parseFlags(fs, c, args, stdout)
}

func parseForward(c command, args []string, stdout io.Writer) (runner, error) {
	fs := newFlagSet(c.name)
	var o forward.Options
	fs.StringVar(&o.Weights, "weights", "", "safetensors file with an nn.MultiheadAttention state_dict (in_proj_weight, ..., out_proj.bias); add_bias_kv, bias and kdim/vdim are read off it")
	fs.StringVar(&o.Inputs, "inputs", "", "safetensors file with query, key, value (float32, PyTorch's layout) and optional attn_mask, key_padding_mask (bool/uint8: true = blocked; float32: added)")
	fs.StringVar(&o.Out, "out", "", "safetensors file to write: attn_output, and attn_output_weights with --need-weights")
	fs.IntVar(&o.NumHeads, "num-heads", 0, "number of heads (must divide embed_dim)")
	fs.BoolVar(&o.BatchFirst, "batch-first", false, "inputs and output are [batch, seq, feature] (PyTorch batch_first=True); default [seq, batch, feature]")
	fs.BoolVar(&o.AddZeroAttn, "add-zero-attn", false, "append a zero key/value column (PyTorch add_zero_attn=True)")
	fs.BoolVar(&o.NeedWeights, "need-weights", false, "also write attn_output_weights, per head [batch, heads, Lq, Lk']")
	fs.BoolVar(&o.AverageAttnWeights, "average-attn-weights", false, "with --need-weights: average the weights over the heads, [batch, Lq, Lk']")
	fs.BoolVar(&o.IsCausal, "is-causal", false, "apply the causal mask PyTorch builds for is_causal=True (query i sees keys j <= i), besides any attn_mask")
	fs.StringVar(&o.Backend, "backend", "", backendHelpShort)
	maxMemoryVar(fs, &o.MaxMemory, "the forward pass")
	err := parseFlags(fs, c, args, stdout)
	o.Given = given(fs)
	return o, err
}

func parseSDPA(c command, args []string, stdout io.Writer) (runner, error) {
	fs := newFlagSet(c.name)
	var o sdpa.Options
	fs.StringVar(&o.Inputs, "inputs", "", "safetensors file with float32 query [B, Hq, Lq, E], key [B, Hkv, S, E], value [B, Hkv, S, Ev] and an optional attn_mask (bool: true = take part; float: added) broadcastable to [B, Hq, Lq, S]")
	fs.StringVar(&o.Out, "out", "", "safetensors file to write: attn_output [B, Hq, Lq, Ev] float32")
	fs.BoolVar(&o.IsCausal, "is-causal", false, "causal mask aligned top-left, as SDPA's is_causal: query i sees keys j <= i")
	fs.Float64Var(&o.Scale, "scale", 0, "factor of q·kᵀ (default 1/sqrt(E))")
	fs.BoolVar(&o.EnableGQA, "enable-gqa", false, "grouped-query attention: Hq a multiple of Hkv, query head h uses key/value head h/(Hq/Hkv)")
	fs.IntVar(&o.WindowLeft, "window-left", sdpa.Unbounded, "sliding window: query i sees keys j >= i - N (default unbounded)")
	fs.IntVar(&o.WindowRight, "window-right", sdpa.Unbounded, "sliding window: query i sees keys j <= i + N (default unbounded)")
	fs.BoolVar(&o.ALiBi, "alibi", false, "add ALiBi biases slope_h·(j - i), the ALiBi paper's slopes for Hq heads")
	fs.Float64Var(&o.SoftCap, "softcap", 0, "soft-cap the logits: C·tanh(logits/C) (Gemma 2)")
	fs.StringVar(&o.RoPE, "rope", "", "rotary position embedding of query and key: half (NeoX / Hugging Face rotate_half) or interleaved (GPT-J / GGUF); query row i at position S - Lq + i, key j at j")
	fs.Float64Var(&o.RoPETheta, "rope-theta", 10000, "RoPE base θ")
	fs.BoolVar(&o.Flash, "flash", false, "compute with FlashAttention (block by block) instead of plain attention")
	fs.StringVar(&o.Backend, "backend", "", backendHelpShort)
	err := parseFlags(fs, c, args, stdout)
	o.Given = given(fs)
	return o, err
}

func parseHLO(c command, args []string, stdout io.Writer) (runner, error) {
	fs := newFlagSet(c.name)
	var o hlo.Options
	fs.StringVar(&o.Stage, "stage", hlo.StableHLO, "what to print: stablehlo (GoMLX's program), hlo (XLA's HLO before optimisation) or optimized (after optimisation)")
	fs.BoolVar(&o.Stats, "stats", false, "print only the op counts (and fusions), not the text")
	fs.StringVar(&o.Backend, "backend", xla.SpecCPU, "XLA backend to compile with: xla:cpu or xla:cuda (the pure-Go backend has no HLO)")
	fs.IntVar(&o.Batch, "batch", 2, "batch size B")
	fs.IntVar(&o.Seq, "seq", 8, "sequence length L")
	fs.IntVar(&o.DModel, "dmodel", 32, "model (embedding) dimension E")
	fs.IntVar(&o.Heads, "heads", 4, "number of heads h (must divide E)")
	fs.BoolVar(&o.Separate, "separate", false, "separate q/k/v projection weights instead of the fused in_proj_weight")
	fs.BoolVar(&o.Causal, "causal", false, "causal mask (key j ≤ query i)")
	fs.IntVar(&o.Devices, "devices", 1, "compile head-parallel attention for N devices (xla:cpu makes N virtual devices) and show one device's HLO (--stage optimized unless given) and its collectives; N must divide --heads")
	maxMemoryVar(fs, &o.MaxMemory, "the input and the weights (the graph is compiled, not run)")
	err := parseFlags(fs, c, args, stdout)
	o.Given = given(fs)
	return o, err
}

func parseBench(c command, args []string, stdout io.Writer) (runner, error) {
	fs := newFlagSet(c.name)
	var o benchcmd.Options
	fs.BoolVar(&o.Quick, "quick", false, "small shapes and few runs (CI smoke test, well under a minute)")
	fs.StringVar(&o.Backends, "backends", "", "comma-separated backends (default: every available one of go, xla:cpu, xla:cuda; go-gomlx: go with fastgo off)")
	fs.StringVar(&o.Suites, "suites", strings.Join(bench.Suites(), ","), "comma-separated suites: "+strings.Join(bench.Suites(), ", "))
	fs.StringVar(&o.Groups, "groups", "", "comma-separated groups of forward-pass cases to run: "+strings.Join(bench.Groups(), ", ")+" (default: all)")
	fs.StringVar(&o.JSONPath, "json", filepath.Join("build", "bench", "bench.json"), "write the results as JSON to this file")
	fs.StringVar(&o.ComparePath, "compare", "", "JSON report of a previous run (its --json file): print, per case, the change of the median and of the ratio to PyTorch")
	fs.StringVar(&o.Pythons, "python", "", "Pythons with PyTorch, comma-separated, each timed (default: $MHALAB_TORCH_VENV/bin/python, the venv of scripts/setup.sh, else python3)")
	fs.StringVar(&o.LlamaPython, "llama-python", "", "Python with llama-cpp-python for the smollm2 suite's llama.cpp row (default: $MHALAB_LLAMA_VENV/bin/python, the venv of scripts/setup.sh --only llama, else the PyTorch Python)")
	fs.StringVar(&o.TorchDevice, "torch-device", "cpu", "device PyTorch runs on: cpu, or cuda (next to xla:cuda)")
	fs.StringVar(&o.TorchScript, "torch-script", "", "path of parity/bench_torch.py (default: found from the working directory)")
	fs.IntVar(&o.Threads, "threads", runtime.NumCPU(), "PyTorch and llama.cpp threads (Go and XLA use every core; keep equal to the core count for a fair comparison)")
	fs.DurationVar(&o.Budget, "budget", 0, "time budget per case and backend for the timed runs (default 30s, --quick 3s); at least 3 runs")
	fs.DurationVar(&o.MemTimeout, "mem-timeout", 20*time.Minute, "time limit of each memory measurement process")
	fs.IntVar(&o.Devices, "devices", 0, "devices suite: largest device count (1, 2, 4, … up to it); xla:cpu makes that many virtual devices (default: the backend's count, 4 for xla:cpu)")
	fs.BoolVar(&o.NoProgress, "no-progress", false, "no progress bar (it is shown only when stderr is a terminal)")
	fs.StringVar(&o.Child, "child", "", "internal: run one memory measurement described by this JSON and print its result")
	return o, parseFlags(fs, c, args, stdout)
}

// minilmFlags defines the flags embed and attention share.
func minilmFlags(fs *flag.FlagSet, backend *string, json *bool, model *string, maxTokens *int) {
	fs.StringVar(backend, "backend", "", backendHelp)
	fs.BoolVar(json, "json", false, "print JSON only on stdout (warnings go to stderr)")
	fs.StringVar(model, "model", "", "the all-MiniLM-L6-v2 folder (default: $MHALAB_MODELS/all-minilm-l6-v2, where scripts/setup.sh puts it)")
	fs.IntVar(maxTokens, "max-tokens", 256, "truncate longer input to N tokens ([CLS] and [SEP] included), at most 512")
}

func parseEmbed(c command, args []string, stdout io.Writer) (runner, error) {
	fs := newFlagSet(c.name)
	var o embed.Options
	minilmFlags(fs, &o.Backend, &o.JSON, &o.Model, &o.MaxTokens)
	var err error
	o.Sentences, err = parseFlagsAndArgs(fs, c, args, stdout)
	return o, err
}

func parseAttention(c command, args []string, stdout io.Writer) (runner, error) {
	fs := newFlagSet(c.name)
	var o attention.Options
	minilmFlags(fs, &o.Backend, &o.JSON, &o.Model, &o.MaxTokens)
	fs.StringVar(&o.HTML, "html", "", "write the interactive explorer page (self-contained HTML) to FILE")
	var err error
	o.Sentences, err = parseFlagsAndArgs(fs, c, args, stdout)
	return o, err
}

// smolFlags defines the flags generate and chat share (greedy: nil for chat, which has no
// --greedy).
func smolFlags(fs *flag.FlagSet, backend, model *string, maxNew *int, greedy *bool, s *smollm2.Sampling) {
	fs.StringVar(backend, "backend", "", backendHelpShort)
	fs.StringVar(model, "model", "", "GGUF file of the model (default: the one scripts/setup.sh installs, under $MHALAB_MODELS)")
	fs.IntVar(maxNew, "max-new-tokens", generate.DefaultMaxNewTokens, "generate at most N tokens (per answer, for chat)")
	if greedy != nil {
		fs.BoolVar(greedy, "greedy", false, "pick the most likely token at each step (the default)")
	}
	fs.Float64Var(&s.Temperature, "temperature", 0, "sample from softmax(logits/T) instead of greedy decoding (T > 0; 0 is refused: for greedy decoding, the default, leave --temperature out)")
	fs.IntVar(&s.TopK, "top-k", 50, "with --temperature: sample among the K most likely tokens (0: all)")
	fs.Float64Var(&s.TopP, "top-p", 1, "with --temperature: sample among the most likely tokens whose probability reaches P, in (0, 1]")
	fs.Uint64Var(&s.Seed, "seed", 0, "with --temperature: seed of the random numbers")
}

func parseGenerate(c command, args []string, stdout io.Writer) (runner, error) {
	fs := newFlagSet(c.name)
	var o generate.Options
	smolFlags(fs, &o.Backend, &o.Model, &o.MaxNewTokens, &o.Greedy, &o.Sampling)
	fs.BoolVar(&o.Chat, "chat", false, "wrap PROMPT as one user turn with the model's chat template (and its default system prompt)")
	fs.BoolVar(&o.JSON, "json", false, `print one JSON object at the end instead of streaming: {"prompt_ids": [...], "ids": [...], "text": "..."}`)
	var err error
	o.Prompt, err = parseFlagsAndArgs(fs, c, args, stdout) // PROMPT before or after the flags
	o.Given = given(fs)
	return o, err
}

func parseChat(c command, args []string, stdout io.Writer) (runner, error) {
	fs := newFlagSet(c.name)
	var o chat.Options
	smolFlags(fs, &o.Backend, &o.Model, &o.MaxNewTokens, nil, &o.Sampling)
	fs.IntVar(&o.MaxContext, "max-context", chat.DefaultContext, "positions of the conversation (its KV cache), at most the model's context")
	err := parseFlags(fs, c, args, stdout)
	o.Given = given(fs)
	return o, err
}

func parseExplore(c command, args []string, stdout io.Writer) (runner, error) {
	var o explore.Options
	fs := newFlagSet(c.name)
	fs.StringVar(&o.Model, "model", "", `a Llama-family GGUF file, a BERT-family folder (config.json, tokenizer.json, model.safetensors), or "minilm" / "smollm2" for the models scripts/setup.sh installs (default minilm)`)
	fs.IntVar(&o.Port, "port", 0, "listen on 127.0.0.1:N (0: a free port)")
	fs.StringVar(&o.Backend, "backend", "", backendHelpShort)
	fs.IntVar(&o.MaxTokens, "max-tokens", 0, "show texts of at most N tokens (0: 128; at most the model's context)")
	return o, parseFlags(fs, c, args, stdout)
}
