// Command mhalab runs, checks and measures multi-head attention built with mhalib.
//
//	mhalab backends                          which backends this machine has
//	mhalab demo [--backend B] [--runs N]     one MHA forward pass, checked and timed
//
// Run "mhalab help" for every command, "mhalab <command> -h" for its flags.
//
// This file is the table of commands. Each command lives in its own package under
// internal/commands (options struct, Run(ctx, cli.IO)); parse.go and lessons.go fill the options
// from the flags; cli.go holds the help, the dispatch and the mapping of errors to exit
// statuses.
//
// # Exit status
//
//	0  success (also for -h)
//	1  the command failed, or a value it was given cannot be run: a size that is zero,
//	   negative or needs more memory than allowed, heads that do not divide d_model, a file
//	   that is missing or malformed, a backend that is not installed
//	2  bad usage: the command line does not fit the synopsis (unknown command or flag, a
//	   flag value of the wrong type or not one of its listed choices, a missing required flag,
//	   an extra argument)
//	130 interrupted: Ctrl-C stopped generate, chat or bench. These, explore and lessons stop
//	   cleanly on Ctrl-C or SIGTERM (a second Ctrl-C kills); the other commands are killed by
//	   the first, as any program.
//
// Errors are one line on stderr, "mhalab <command>: <what is wrong>"; a usage error adds a
// second line pointing to -h. A panic (a bug) is reported the same way, as an internal error;
// MHALAB_DEBUG=1 adds its stack.
package main

import (
	"fmt"
	"os"

	"github.com/mhalab/mhalab/fastgo" // fast pure-Go matmul for the "go" backend (MHALAB_FASTGO=0: off)
	"github.com/mhalab/mhalab/internal/cli"
	"github.com/mhalab/mhalab/internal/sandbox"
	"github.com/mhalab/mhalab/mhalib/dotgrad"
	"github.com/mhalab/mhalab/xla"
)

// commands is the table of mhalab's commands, in the order help lists them.
var commands = []command{
	{
		name:    "demo",
		args:    "[--backend B] [--runs N] [--batch B] [--seq L] [--dmodel E] [--heads H] [--seed S]",
		summary: "one multi-head self-attention forward pass (default batch 32, seq 128, d_model 512, 8 heads), checked and timed",
		parse:   parseDemo,
	},
	{
		name: "forward",
		args: "--weights W.safetensors --inputs I.safetensors --out O.safetensors --num-heads N [--batch-first] " +
			"[--add-zero-attn] [--need-weights] [--average-attn-weights] [--is-causal] [--backend B]",
		summary: "torch.nn.MultiheadAttention forward with a PyTorch state_dict; inputs and outputs in PyTorch's layouts (safetensors)",
		parse:   parseForward,
	},
	{
		name: "sdpa",
		args: "--inputs I.safetensors --out O.safetensors [--is-causal] [--scale S] [--enable-gqa] [--window-left N] [--window-right N] " +
			"[--alibi] [--softcap C] [--rope half|interleaved] [--rope-theta T] [--flash] [--backend B]",
		summary: "scaled dot-product attention with GQA, RoPE, sliding window, ALiBi and soft-cap on tensors from a safetensors file (float32; PyTorch's SDPA layout)",
		parse:   parseSDPA,
	},
	{
		name:    "hlo",
		args:    "[--stage stablehlo|hlo|optimized] [--stats] [--backend B] [--batch B] [--seq L] [--dmodel E] [--heads H] [--separate] [--causal]",
		summary: "what XLA makes of the multi-head self-attention graph: its StableHLO, its HLO, or the optimised HLO with fusions counted",
		parse:   parseHLO,
	},
	{
		name:          "bench",
		args:          "[--quick] [--backends LIST] [--suites LIST] [--json FILE] [--python PATHS] [--torch-device cpu|cuda] [--threads N] [--budget D]",
		summary:       "time MHA on every backend and PyTorch side by side (markdown + JSON); KV-cache decoding; peak memory of flash vs plain attention and of checkpointing",
		parse:         parseBench,
		interruptible: true,
	},
	{
		name:    "embed",
		args:    "[--backend B] [--json] [--model DIR] [--max-tokens N] SENTENCE...",
		summary: "sentence embeddings with all-MiniLM-L6-v2 (mean pooling, L2-normalised); --json: one object per line",
		parse:   parseEmbed,
	},
	{
		name:    "attention",
		args:    "[--backend B] [--json] [--html FILE] [--model DIR] [--max-tokens N] SENTENCE",
		summary: "attention weights of every layer and head of all-MiniLM-L6-v2 on a sentence; --html FILE: the explorer page",
		parse:   parseAttention,
	},
	{
		name:          "explore",
		args:          "[--model DIR|FILE|minilm|smollm2] [--port N] [--backend B] [--max-tokens N]",
		summary:       "the live attention explorer: a web page on 127.0.0.1 (URL with a token) showing every head's attention as you type, the next-token distribution, generation step by step with the KV cache",
		parse:         parseExplore,
		interruptible: true,
	},
	{
		name: "generate",
		args: "[--backend B] [--max-new-tokens N] [--greedy | --temperature T --top-k K --top-p P --seed S] [--chat] [--json] [--model FILE] PROMPT",
		summary: "continue PROMPT with SmolLM2-135M-Instruct, streamed (--json: one object {prompt_ids, ids, text}); " +
			"stops at <|im_end|> or after N tokens; --chat wraps PROMPT in the chat template",
		parse:         parseGenerate,
		interruptible: true,
	},
	{
		name:          "chat",
		args:          "[--backend B] [--max-new-tokens N] [--max-context N] [--temperature T --top-k K --top-p P --seed S] [--model FILE]",
		summary:       "talk with SmolLM2-135M-Instruct: one line per message, the history stays in the KV cache; Ctrl-D quits",
		parse:         parseChat,
		interruptible: true,
	},
	{
		name:    "backends",
		summary: "list the backends (go, xla:cpu, xla:cuda): available or why not, plugin, PJRT version, devices",
		parse:   parseBackends,
	},
	{
		name:          "lessons",
		args:          "[list | check [N] | hint N | watch | reset N | solution N | verify | grade DIR...] [flags]",
		summary:       "classroom exercises in lessons/: progress, check, hints, watch mode; verify and grade for teachers",
		parse:         parseLessons,
		interruptible: true,
	},
}

func main() {
	sandbox.Main() // in a sandbox's trampoline: apply the policy and exec the student's program (never returns)
	if err := xla.ExecWithHugePages(); err != nil && os.Getenv("MHALAB_DEBUG") != "" {
		fmt.Fprintln(os.Stderr, "mhalab: starting again with huge pages for XLA:", err) // then run as we are
	}
	dotgrad.Install() // DotGeneral's gradient as matrix products (mhalib/dotgrad)
	if err := fastgo.InstallError(); err != nil {
		fmt.Fprintln(os.Stderr, "mhalab:", err) // once per run: built with another GoMLX, the go backend is slower
	}
	os.Exit(runIO(os.Args[1:], cli.IO{In: os.Stdin, Out: os.Stdout, Err: os.Stderr}, true))
}
