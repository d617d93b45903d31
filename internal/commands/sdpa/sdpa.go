// Package sdpa is `mhalab sdpa` (cmd/mhalab only parses its flags): scaled
// dot-product attention with the options of current LLMs on tensors read from a safetensors file,
// with exactly these semantics (issue 13, a contract other tools rely on), in this order:
//
//  1. RoPE (Options.RoPE "half" or "interleaved", base RoPETheta) rotates query row i at position
//     S − Lq + i and key j at position j;
//  2. logits = q·kᵀ·scale (scale default 1/√E);
//  3. soft-cap C·tanh(logits/C) (Config.SoftCap);
//  4. + ALiBi slope_h·(j − i) with the ALiBi paper's slopes for Hq heads;
//  5. + the float attn_mask;
//  6. the bool attn_mask (true = take part, as SDPA), is_causal (top-left, j ≤ i) and the window
//     (top-left: i − left ≤ j ≤ i + right; a missing side unbounded) block to −∞;
//  7. softmax over the keys; a row blocked entirely (by any combination, a float mask of −∞
//     included) gives 0.
//
// Inputs: query [B, Hq, Lq, E], key [B, Hkv, S, E], value [B, Hkv, S, Ev] (float32 for the
// command; float64 also works here), optional attn_mask (bool or the query's float dtype)
// broadcastable to [B, Hq, Lq, S] as NumPy broadcasts. Output: attn_output [B, Hq, Lq, Ev].
// Every error is one line naming the tensor, the shapes or the flag.
package sdpa

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sort"

	"github.com/gomlx/gomlx/backends"
	"github.com/gomlx/gomlx/pkg/core/dtypes"
	. "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/tensors"

	"github.com/mhalab/mhalab/internal/cli"
	"github.com/mhalab/mhalab/mhalib"
	"github.com/mhalab/mhalab/torchio"
)

// Unbounded is the value of a window side that was not given.
const Unbounded = -1

// Config is the attention `mhalab sdpa` computes: its flags (and Sinks and the block sizes,
// which only the tests and parity use).
type Config struct {
	IsCausal                bool
	Scale                   float64 // used when ScaleSet
	ScaleSet                bool
	EnableGQA               bool
	WindowLeft, WindowRight int // Unbounded (−1) when not given; other negatives are errors
	ALiBi                   bool
	SoftCap                 float64 // 0: none
	RoPE                    string  // "", "half" or "interleaved"
	RoPETheta               float64 // 0: 10 000
	Flash                   bool
	BlockQ, BlockK          int             // FlashAttention's block sizes; 0: mhalib's defaults
	Sinks                   *tensors.Tensor // [Hq] sink logits (gpt-oss), or nil
}

// InputNames returns the tensors an inputs file may hold.
func InputNames() []string { return []string{"query", "key", "value", "attn_mask"} }

// ErrBadInput is wrapped by every error about the inputs or options.
var ErrBadInput = errors.New("sdpa: bad input")

// inputError is one line about the inputs or options; it wraps ErrBadInput.
type inputError struct{ msg string }

func (e *inputError) Error() string { return e.msg }
func (e *inputError) Unwrap() error { return ErrBadInput }

func bad(format string, args ...any) error { return &inputError{fmt.Sprintf(format, args...)} }

// Check validates the inputs and the options against the contract; it returns nil or one error
// naming the tensor, the shapes or the option.
func Check(in map[string]*tensors.Tensor, o Config) error {
	var unknown []string
	for name := range in {
		known := false
		for _, n := range InputNames() {
			known = known || n == name
		}
		if !known {
			unknown = append(unknown, name)
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		return bad("unknown tensor(s) %q: the inputs are query, key, value and an optional attn_mask", unknown)
	}
	q, k, v := in["query"], in["key"], in["value"]
	for _, x := range []struct {
		name string
		t    *tensors.Tensor
	}{{"query", q}, {"key", k}, {"value", v}} {
		if x.t == nil {
			return bad("no tensor %q in the inputs", x.name)
		}
		if x.t.Rank() != 4 {
			return bad("%s shape %v: want rank 4 [B, H, L, E]", x.name, x.t.Shape().Dimensions)
		}
		if dt := x.t.DType(); dt != dtypes.Float32 && dt != dtypes.Float64 {
			return bad("%s has dtype %s: want float32", x.name, dt)
		}
		if x.t.DType() != q.DType() {
			return bad("%s has dtype %s, query %s: want one dtype", x.name, x.t.DType(), q.DType())
		}
	}
	qd, kd, vd := q.Shape().Dimensions, k.Shape().Dimensions, v.Shape().Dimensions
	B, Hq, Lq, E := qd[0], qd[1], qd[2], qd[3]
	Hkv, S := kd[1], kd[2]
	switch {
	case kd[0] != B || kd[3] != E:
		return bad("key shape %v does not fit query shape %v: want [B=%d, Hkv, S, E=%d]", kd, qd, B, E)
	case vd[0] != B || vd[1] != Hkv || vd[2] != S:
		return bad("value shape %v does not fit key shape %v: want [B=%d, Hkv=%d, S=%d, Ev]", vd, kd, B, Hkv, S)
	case B == 0 || Hq == 0 || Lq == 0 || E == 0 || Hkv == 0 || S == 0 || vd[3] == 0:
		return bad("query %v, key %v, value %v: every dimension must be positive", qd, kd, vd)
	case Hq != Hkv && !o.EnableGQA:
		return bad("query has %d heads, key and value %d (query %v, key %v): pass --enable-gqa for grouped-query attention", Hq, Hkv, qd, kd)
	case Hq%Hkv != 0:
		return bad("query has %d heads, not a multiple of key's %d (query %v, key %v)", Hq, Hkv, qd, kd)
	}
	if m := in["attn_mask"]; m != nil {
		if m.DType() != dtypes.Bool && m.DType() != q.DType() {
			return bad("attn_mask has dtype %s: want bool (true = take part) or the query's float dtype %s", m.DType(), q.DType())
		}
		if _, err := broadcastShape(m.Shape().Dimensions, []int{B, Hq, Lq, S}); err != nil {
			return err
		}
	}
	if o.WindowLeft < Unbounded || o.WindowRight < Unbounded {
		return bad("window (left %d, right %d): sides must be ≥ 0", o.WindowLeft, o.WindowRight)
	}
	if o.SoftCap < 0 || math.IsNaN(o.SoftCap) || math.IsInf(o.SoftCap, 0) {
		return bad("softcap %g: want a positive cap", o.SoftCap)
	}
	if o.ScaleSet && (math.IsNaN(o.Scale) || math.IsInf(o.Scale, 0)) {
		return bad("scale %g: want a finite number", o.Scale)
	}
	switch o.RoPE {
	case "", "half", "interleaved":
	default:
		return bad("rope %q: want half or interleaved", o.RoPE)
	}
	if o.RoPE != "" && E%2 != 0 {
		return bad("rope needs an even head size, query shape %v has E = %d", qd, E)
	}
	if o.RoPETheta < 0 || math.IsNaN(o.RoPETheta) || math.IsInf(o.RoPETheta, 0) {
		return bad("rope-theta %g: want a positive base", o.RoPETheta)
	}
	if o.Sinks != nil && (o.Sinks.Rank() != 1 || o.Sinks.Shape().Dim(0) != Hq || o.Sinks.DType() != q.DType()) {
		return bad("sinks shape %s: want [%d] in the query's dtype", o.Sinks.Shape(), Hq)
	}
	return nil
}

// broadcastShape returns m's dimensions left-padded with 1s to rank 4, if m broadcasts (NumPy
// rules) to want.
func broadcastShape(m, want []int) ([]int, error) {
	if len(m) > 4 {
		return nil, bad("attn_mask shape %v does not broadcast to [B, Hq, Lq, S] = %v", m, want)
	}
	out := append(make([]int, 4-len(m)), m...)
	for i := range out {
		if i < 4-len(m) {
			out[i] = 1
		}
		if out[i] != 1 && out[i] != want[i] {
			return nil, bad("attn_mask shape %v does not broadcast to [B, Hq, Lq, S] = %v", m, want)
		}
	}
	return out, nil
}

// Attention checks the inputs (Check) and computes attn_output [B, Hq, Lq, Ev] on backend.
func Attention(backend backends.Backend, in map[string]*tensors.Tensor, o Config) (*tensors.Tensor, error) {
	if err := Check(in, o); err != nil {
		return nil, err
	}
	q, k, v, mask := in["query"], in["key"], in["value"], in["attn_mask"]
	args := []any{q, k, v}
	if mask != nil {
		args = append(args, mask)
	}
	if o.Sinks != nil {
		args = append(args, o.Sinks)
	}
	exec, err := NewExec(backend, func(nodes []*Node) *Node { return build(nodes, mask != nil, o) })
	if err != nil {
		return nil, err
	}
	defer exec.Finalize()
	res, err := exec.Exec(args...)
	if err != nil {
		return nil, err
	}
	return res[0], nil
}

// build is the graph: nodes are query, key, value, then attn_mask if hasMask, then sinks.
func build(nodes []*Node, hasMask bool, o Config) *Node {
	q, k, v := nodes[0], nodes[1], nodes[2]
	rest := nodes[3:]
	B, Hq, Lq := q.Shape().Dim(0), q.Shape().Dim(1), q.Shape().Dim(2)
	S := k.Shape().Dim(2)
	// 1) RoPE: query row i at position S − Lq + i, key j at j.
	if o.RoPE != "" {
		conv := mhalib.RoPEHalfSplit
		if o.RoPE == "interleaved" {
			conv = mhalib.RoPEInterleaved
		}
		theta := o.RoPETheta
		if theta == 0 {
			theta = mhalib.DefaultRoPETheta
		}
		q = mhalib.RoPE(q).Convention(conv).Theta(theta).Offset(S - Lq).Done()
		k = mhalib.RoPE(k).Convention(conv).Theta(theta).Done()
	}
	// 2)–7) through mhalib's shared attention options.
	opts := func(a attentionOptions) {
		a.setGQA(Hq != k.Shape().Dim(1))
		if o.ScaleSet {
			a.setScale(o.Scale)
		}
		if o.SoftCap > 0 {
			a.setSoftCap(o.SoftCap)
		}
		if o.ALiBi {
			a.setALiBi(mhalib.ALiBiSlopes(Hq))
		}
		if hasMask {
			m := rest[0]
			dims, _ := broadcastShape(m.Shape().Dimensions, []int{B, Hq, Lq, S})
			m = Reshape(m, dims...)
			m = BroadcastToDims(m, dims[0], dims[1], Lq, S) // [B|1, Hq|1, Lq, S]
			if m.DType() == dtypes.Bool {
				a.setMask(mhalib.MaskAttendWhereTrue(m))
			} else {
				a.setMask(mhalib.MaskAdditive(m))
			}
			rest = rest[1:]
		}
		if o.IsCausal {
			a.setCausal(mhalib.CausalTopLeft)
		}
		if o.WindowLeft != Unbounded || o.WindowRight != Unbounded {
			a.setWindow(o.WindowLeft, o.WindowRight)
		}
		if o.Sinks != nil {
			a.setSinks(rest[0])
		}
	}
	if o.Flash {
		b := mhalib.FlashAttention(q, k, v)
		if o.BlockQ > 0 && o.BlockK > 0 {
			b.BlockSizes(o.BlockQ, o.BlockK)
		}
		opts(flashOptions{b})
		return b.Done()
	}
	b := mhalib.ScaledDotProductAttention(q, k, v)
	opts(sdpaOptions{b})
	return b.Done()
}

// attentionOptions sets the same options on either builder.
type attentionOptions interface {
	setGQA(bool)
	setScale(float64)
	setSoftCap(float64)
	setALiBi([]float64)
	setMask(mhalib.Mask)
	setCausal(mhalib.Causal)
	setWindow(left, right int)
	setSinks(*Node)
}

type sdpaOptions struct{ b *mhalib.SDPABuilder }

func (s sdpaOptions) setGQA(on bool)            { s.b.EnableGQA(on) }
func (s sdpaOptions) setScale(x float64)        { s.b.Scale(x) }
func (s sdpaOptions) setSoftCap(c float64)      { s.b.SoftCap(c) }
func (s sdpaOptions) setALiBi(sl []float64)     { s.b.ALiBi(sl) }
func (s sdpaOptions) setMask(m mhalib.Mask)     { s.b.AttnMask(m) }
func (s sdpaOptions) setCausal(c mhalib.Causal) { s.b.Causal(c) }
func (s sdpaOptions) setWindow(l, r int)        { s.b.Window(l, r, mhalib.AlignTopLeft) }
func (s sdpaOptions) setSinks(x *Node)          { s.b.Sinks(x) }

type flashOptions struct{ b *mhalib.FlashBuilder }

func (s flashOptions) setGQA(on bool)            { s.b.EnableGQA(on) }
func (s flashOptions) setScale(x float64)        { s.b.Scale(x) }
func (s flashOptions) setSoftCap(c float64)      { s.b.SoftCap(c) }
func (s flashOptions) setALiBi(sl []float64)     { s.b.ALiBi(sl) }
func (s flashOptions) setMask(m mhalib.Mask)     { s.b.AttnMask(m) }
func (s flashOptions) setCausal(c mhalib.Causal) { s.b.Causal(c) }
func (s flashOptions) setWindow(l, r int)        { s.b.Window(l, r, mhalib.AlignTopLeft) }
func (s flashOptions) setSinks(x *Node)          { s.b.Sinks(x) }

// Options are the flags of `mhalab sdpa`.
type Options struct {
	Inputs, Out string    // safetensors files: float32 query, key, value (+ attn_mask); attn_output
	Backend     string    // "" = the default backend (xla.NewWithReason)
	Given       cli.Given // which of scale, rope-theta, window-left, window-right, softcap were given
	Config
}

// Run is `mhalab sdpa`: check the flags, refuse an --out that is the --inputs file, read
// o.Inputs (float32 query, key, value, optional attn_mask), compute attention, write attn_output
// (float32) to o.Out, and print one line about it on io.Out (the backend and any non-finite
// output on io.Err). Every error is one line.
func (o Options) Run(_ context.Context, io cli.IO) error {
	o.ScaleSet = o.ScaleSet || o.Given["scale"]
	switch {
	case o.Inputs == "" || o.Out == "":
		return cli.Usagef("--inputs and --out are required")
	case o.RoPE != "" && o.RoPE != "half" && o.RoPE != "interleaved":
		return cli.Usagef("--rope %q: want half or interleaved", o.RoPE)
	case o.Given["rope-theta"] && o.RoPE == "":
		return cli.Usagef("--rope-theta needs --rope")
	case o.Given["window-left"] && o.WindowLeft < 0:
		return fmt.Errorf("--window-left %d: a window side must be >= 0", o.WindowLeft)
	case o.Given["window-right"] && o.WindowRight < 0:
		return fmt.Errorf("--window-right %d: a window side must be >= 0", o.WindowRight)
	case o.Given["softcap"] && !(o.SoftCap > 0):
		return fmt.Errorf("--softcap %g: want a positive cap", o.SoftCap)
	case !(o.RoPETheta > 0):
		return fmt.Errorf("--rope-theta %g: want a positive base", o.RoPETheta)
	}
	if err := cli.CheckBackend(o.Backend); err != nil {
		return err
	}
	if err := cli.CheckOutput(cli.FileArg{Flag: "--out", Path: o.Out}, true, cli.FileArg{Flag: "--inputs", Path: o.Inputs}); err != nil {
		return err
	}
	in, err := torchio.ReadFile(o.Inputs)
	if err != nil {
		return fmt.Errorf("--inputs: %w", err)
	}
	for _, n := range []string{"query", "key", "value"} {
		if x := in.Tensors[n]; x != nil && x.DType() != dtypes.Float32 {
			return fmt.Errorf("--inputs %s: %s has dtype %s: want float32", o.Inputs, n, x.DType())
		}
	}
	if err := Check(in.Tensors, o.Config); err != nil {
		return fmt.Errorf("--inputs %s: %w", o.Inputs, err)
	}
	backend, err := cli.NewBackend(o.Backend, io.Err)
	if err != nil {
		return err
	}
	defer backend.Finalize()
	out, err := Attention(backend, in.Tensors, o.Config)
	if err != nil {
		return err
	}
	meta := map[string]string{"written_by": "mhalab sdpa", "backend": backend.Name(), "flash": fmt.Sprint(o.Flash)}
	if err := torchio.WriteFile(o.Out, map[string]*tensors.Tensor{"attn_output": out}, meta); err != nil {
		return fmt.Errorf("--out: %w", err)
	}
	cli.WarnNonFinite(io.Err, "mhalab sdpa: ", map[string]*tensors.Tensor{"attn_output": out}, "--inputs", in.Tensors)
	fmt.Fprintf(io.Out, "mhalab sdpa: query %v, key %v → %s: attn_output %v\n",
		in.Tensors["query"].Shape().Dimensions, in.Tensors["key"].Shape().Dimensions, o.Out, out.Shape().Dimensions)
	return nil
}
