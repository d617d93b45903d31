package main

import (
	"flag"
	"fmt"
	"io"

	"github.com/mhalab/mhalab/internal/sdpacmd"
	"github.com/mhalab/mhalab/xla"
)

// `mhalab sdpa` is a public contract (issue 13; the semantics are in internal/sdpacmd's package
// documentation): keep its flags, tensor names and order of operations as they are.

func runSDPA(c command, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet(c.name)
	var f sdpacmd.Files
	var o sdpacmd.Options
	fs.StringVar(&f.Inputs, "inputs", "", "safetensors file with float32 query [B, Hq, Lq, E], key [B, Hkv, S, E], value [B, Hkv, S, Ev] and an optional attn_mask (bool: true = take part; float: added) broadcastable to [B, Hq, Lq, S]")
	fs.StringVar(&f.Out, "out", "", "safetensors file to write: attn_output [B, Hq, Lq, Ev] float32")
	fs.BoolVar(&o.IsCausal, "is-causal", false, "causal mask aligned top-left, as SDPA's is_causal: query i sees keys j <= i")
	fs.Float64Var(&o.Scale, "scale", 0, "factor of q·kᵀ (default 1/sqrt(E))")
	fs.BoolVar(&o.EnableGQA, "enable-gqa", false, "grouped-query attention: Hq a multiple of Hkv, query head h uses key/value head h/(Hq/Hkv)")
	fs.IntVar(&o.WindowLeft, "window-left", sdpacmd.Unbounded, "sliding window: query i sees keys j >= i - N (default unbounded)")
	fs.IntVar(&o.WindowRight, "window-right", sdpacmd.Unbounded, "sliding window: query i sees keys j <= i + N (default unbounded)")
	fs.BoolVar(&o.ALiBi, "alibi", false, "add ALiBi biases slope_h·(j - i), the ALiBi paper's slopes for Hq heads")
	fs.Float64Var(&o.SoftCap, "softcap", 0, "soft-cap the logits: C·tanh(logits/C) (Gemma 2)")
	fs.StringVar(&o.RoPE, "rope", "", "rotary position embedding of query and key: half (NeoX / Hugging Face rotate_half) or interleaved (GPT-J / GGUF); query row i at position S - Lq + i, key j at j")
	fs.Float64Var(&o.RoPETheta, "rope-theta", 10000, "RoPE base θ")
	fs.BoolVar(&o.Flash, "flash", false, "compute with FlashAttention (block by block) instead of plain attention")
	fs.StringVar(&f.Backend, "backend", "", `go, xla:cpu or xla:cuda (default: $GOMLX_BACKEND, else xla:cpu when its plugin loads, else go)`)
	if err := parseFlags(fs, c, args, stdout); err != nil {
		return err
	}
	given := map[string]bool{}
	fs.Visit(func(fl *flag.Flag) { given[fl.Name] = true })
	o.ScaleSet = given["scale"]
	switch {
	case f.Inputs == "" || f.Out == "":
		return usagef("--inputs and --out are required")
	case o.RoPE != "" && o.RoPE != "half" && o.RoPE != "interleaved":
		return usagef("--rope %q: want half or interleaved", o.RoPE)
	case given["rope-theta"] && o.RoPE == "":
		return usagef("--rope-theta needs --rope")
	case given["window-left"] && o.WindowLeft < 0:
		return fmt.Errorf("--window-left %d: a window side must be >= 0", o.WindowLeft)
	case given["window-right"] && o.WindowRight < 0:
		return fmt.Errorf("--window-right %d: a window side must be >= 0", o.WindowRight)
	case given["softcap"] && !(o.SoftCap > 0):
		return fmt.Errorf("--softcap %g: want a positive cap", o.SoftCap)
	case !(o.RoPETheta > 0):
		return fmt.Errorf("--rope-theta %g: want a positive base", o.RoPETheta)
	}
	if err := xla.CheckSpec(f.Backend); err != nil {
		return &usageError{err.Error()}
	}
	if err := checkOutput(fileArg{"--out", f.Out}, true, fileArg{"--inputs", f.Inputs}); err != nil {
		return err
	}
	return sdpacmd.Run(f, o, stdout, stderr)
}
