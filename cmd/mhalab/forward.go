package main

import (
	"flag"
	"fmt"
	"io"
	"sort"

	"github.com/mhalab/mhalab/internal/mhacmd"
	"github.com/mhalab/mhalab/torchio"
	"github.com/mhalab/mhalab/xla"
)

// `mhalab forward` is a public contract (parity/README.md): keep its flags, file names and
// layouts as they are.

// forwardFlags are the flags of `mhalab forward`.
type forwardFlags struct {
	weights, inputs, out string
	backend              string
	mhacmd.ForwardOptions
}

func runForward(c command, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet(c.name)
	var o forwardFlags
	fs.StringVar(&o.weights, "weights", "", "safetensors file with an nn.MultiheadAttention state_dict (in_proj_weight, ..., out_proj.bias); add_bias_kv, bias and kdim/vdim are read off it")
	fs.StringVar(&o.inputs, "inputs", "", "safetensors file with query, key, value (float32, PyTorch's layout) and optional attn_mask, key_padding_mask (bool/uint8: true = blocked; float32: added)")
	fs.StringVar(&o.out, "out", "", "safetensors file to write: attn_output, and attn_output_weights with --need-weights")
	fs.IntVar(&o.NumHeads, "num-heads", 0, "number of heads (must divide embed_dim)")
	fs.BoolVar(&o.BatchFirst, "batch-first", false, "inputs and output are [batch, seq, feature] (PyTorch batch_first=True); default [seq, batch, feature]")
	fs.BoolVar(&o.AddZeroAttn, "add-zero-attn", false, "append a zero key/value column (PyTorch add_zero_attn=True)")
	fs.BoolVar(&o.NeedWeights, "need-weights", false, "also write attn_output_weights, per head [batch, heads, Lq, Lk']")
	fs.BoolVar(&o.AverageAttnWeights, "average-attn-weights", false, "with --need-weights: average the weights over the heads, [batch, Lq, Lk']")
	fs.BoolVar(&o.IsCausal, "is-causal", false, "apply the causal mask PyTorch builds for is_causal=True (query i sees keys j <= i), besides any attn_mask")
	fs.StringVar(&o.backend, "backend", "", `go, xla:cpu or xla:cuda (default: $GOMLX_BACKEND, else xla:cpu when its plugin loads, else go)`)
	maxMemory := addMaxMemoryFlag(fs, "the forward pass")
	if err := parseFlags(fs, c, args, stdout); err != nil {
		return err
	}
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	switch {
	case o.weights == "" || o.inputs == "" || o.out == "":
		return usagef("--weights, --inputs and --out are required")
	case !given["num-heads"]:
		return usagef("--num-heads is required")
	case o.AverageAttnWeights && !o.NeedWeights:
		return usagef("--average-attn-weights needs --need-weights")
	case o.NumHeads < 1:
		return fmt.Errorf("--num-heads %d: want a positive number of heads", o.NumHeads)
	case *maxMemory == 0:
		return fmt.Errorf("--max-memory 0: want a positive size")
	}
	if err := xla.CheckSpec(o.backend); err != nil {
		return &usageError{err.Error()}
	}
	if err := checkOutput(fileArg{"--out", o.out}, true, fileArg{"--weights", o.weights}, fileArg{"--inputs", o.inputs}); err != nil {
		return err
	}

	w, err := torchio.ReadFile(o.weights)
	if err != nil {
		return fmt.Errorf("--weights: %w", err)
	}
	spec, err := torchio.InferMHA(w.Tensors)
	if err != nil {
		return fmt.Errorf("--weights %s: %w", o.weights, err)
	}
	in, err := torchio.ReadFile(o.inputs)
	if err != nil {
		return fmt.Errorf("--inputs: %w", err)
	}
	fi, err := mhacmd.CheckInputs(in.Tensors, spec, o.ForwardOptions)
	if err != nil {
		return fmt.Errorf("--inputs %s: %w", o.inputs, err)
	}
	if err := checkForwardMemory(fi, spec, o.NumHeads, uint64(*maxMemory)); err != nil {
		return fmt.Errorf("--inputs %s: %w", o.inputs, err)
	}
	backend, reason, err := xla.NewWithReason(o.backend)
	if err != nil {
		return err
	}
	defer backend.Finalize()
	fmt.Fprintf(stderr, "mhalab: backend %s\n", reason)

	results, err := mhacmd.Forward(backend, w.Tensors, fi, o.ForwardOptions)
	if err != nil {
		return err
	}
	meta := map[string]string{
		"written_by": "mhalab forward",
		"num_heads":  fmt.Sprint(o.NumHeads),
		"module":     spec.String(),
		"backend":    backend.Name(),
	}
	if err := torchio.WriteFile(o.out, results, meta); err != nil {
		return fmt.Errorf("--out: %w", err)
	}
	mhacmd.WarnNonFinite(stderr, "mhalab forward: ", results, "--inputs", in.Tensors)
	names := make([]string, 0, len(results))
	for n := range results {
		names = append(names, n)
	}
	sort.Strings(names)
	fmt.Fprintf(stdout, "mhalab forward: %s, %d heads → %s:", spec, o.NumHeads, o.out)
	for _, n := range names {
		fmt.Fprintf(stdout, " %s %v", n, results[n].Shape().Dimensions)
	}
	fmt.Fprintln(stdout)
	return nil
}

// checkForwardMemory returns an error when the forward pass on fi would need more than maxMemory
// bytes for its projections, scores and outputs.
func checkForwardMemory(fi *mhacmd.Inputs, spec torchio.MHASpec, heads int, maxMemory uint64) error {
	lk := fi.Lk + 1 // add_bias_kv or add_zero_attn add a key column; counted whether or not
	b, h, e := fi.Batch, heads, spec.EmbedDim
	return checkMemory(fmt.Sprintf("batch %d, %d queries, %d keys, embed_dim %d, %d heads", b, fi.Lq, fi.Lk, e, h),
		"the forward pass", maxMemory,
		tensorNeed{"q, output", 2, []int{b, fi.Lq, e}},
		tensorNeed{"k, v", 2, []int{b, lk, e}},
		tensorNeed{"scores, softmax, weights", 3, []int{b, h, fi.Lq, lk}})
}
