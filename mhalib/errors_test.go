package mhalib_test

import (
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/gomlx/gomlx/backends"
	"github.com/gomlx/gomlx/pkg/core/dtypes"
	. "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/shapes"
	"github.com/gomlx/gomlx/pkg/core/tensors"
	"github.com/gomlx/gomlx/pkg/ml/context"

	"github.com/mhalab/mhalab/internal/backendtest"
	"github.com/mhalab/mhalab/mhalib"
)

// zeros returns a zero tensor of the given dtype and dimensions.
func zeros(dtype dtypes.DType, dims ...int) *tensors.Tensor {
	return tensors.FromShape(shapes.Make(dtype, dims...))
}

// errorCase builds a graph from q, k, v (and an optional mask input) that must fail with a
// message containing every string in want.
type errorCase struct {
	name    string
	q, k, v *tensors.Tensor
	build   func(ctx *context.Context, q, k, v *Node) *Node
	want    []string
}

func mhaWith(h int, fn func(b *mhalib.MHABuilder)) func(ctx *context.Context, q, k, v *Node) *Node {
	return func(ctx *context.Context, q, k, v *Node) *Node {
		b := mhalib.MultiHeadAttention(ctx, q, k, v, h)
		if fn != nil {
			fn(b)
		}
		return b.Done()
	}
}

func boolConst(g *Graph, dims ...int) *Node {
	return Const(g, zeros(dtypes.Bool, dims...))
}

func TestBadInputsReturnErrors(t *testing.T) {
	backendtest.Run(t, func(t *testing.T, backend backends.Backend) {
		for _, c := range badInputCases() { // fresh tensors per backend: a tensor sticks to its backend
			t.Run(c.name, func(t *testing.T) { checkBadInput(t, backend, c) })
		}
	})
}

func badInputCases() []errorCase {
	f64, f32 := dtypes.Float64, dtypes.Float32
	x := zeros(f64, 2, 3, 8)
	kv := zeros(f64, 2, 4, 8)
	sdpa := func(fn func(b *mhalib.SDPABuilder)) func(ctx *context.Context, q, k, v *Node) *Node {
		return func(ctx *context.Context, q, k, v *Node) *Node {
			b := mhalib.ScaledDotProductAttention(q, k, v)
			if fn != nil {
				fn(b)
			}
			return b.Done()
		}
	}
	q4, kv4 := zeros(f64, 2, 2, 3, 4), zeros(f64, 2, 2, 5, 4)
	cases := []errorCase{
		{name: "query rank 2", q: zeros(f64, 3, 8), k: kv, v: kv, build: mhaWith(2, nil), want: []string{"query", "[3 8]", "rank 3"}},
		{name: "flash block sizes", q: x, k: kv, v: kv, build: mhaWith(2, func(b *mhalib.MHABuilder) { b.FlashBlockSizes(0, 64) }),
			want: []string{"FlashBlockSizes", "blockQ=0, blockK=64", "both ≥ 1, or both 0"}},
		{name: "formulation", q: x, k: kv, v: kv, build: mhaWith(2, func(b *mhalib.MHABuilder) { b.Formulation(mhalib.Formulation(9)) }),
			want: []string{"Formulation", "unknown value 9"}},
		{name: "key batch", q: x, k: zeros(f64, 3, 4, 8), v: kv, build: mhaWith(2, nil), want: []string{"key", "[3 4 8]", "[2 3 8]", "batch"}},
		{name: "value Lk", q: x, k: kv, v: zeros(f64, 2, 5, 8), build: mhaWith(2, nil), want: []string{"value", "[2 5 8]", "Lk=4"}},
		{name: "heads do not divide D", q: zeros(f64, 2, 3, 10), k: zeros(f64, 2, 4, 10), v: zeros(f64, 2, 4, 10),
			build: mhaWith(3, nil), want: []string{"numHeads", "3", "10", "[2 3 10]", "HeadSizes"}},
		{name: "head sizes sum", q: zeros(f64, 2, 3, 10), k: zeros(f64, 2, 4, 10), v: zeros(f64, 2, 4, 10),
			build: mhaWith(3, func(b *mhalib.MHABuilder) { b.HeadSizes(4, 4, 3) }), want: []string{"HeadSizes", "[4 4 3]", "sum to 11", "10"}},
		{name: "head sizes count", q: x, k: kv, v: kv,
			build: mhaWith(3, func(b *mhalib.MHABuilder) { b.HeadSizes(4, 4) }), want: []string{"HeadSizes", "[4 4]", "numHeads is 3"}},
		{name: "attn mask shape", q: x, k: kv, v: kv,
			build: mhaWith(2, func(b *mhalib.MHABuilder) { b.AttnMask(mhalib.MaskBlockedWhereTrue(boolConst(b.Graph(), 3, 5))) }),
			want:  []string{"attn_mask", "[3 5]", "Lq=3", "Lk=4"}},
		{name: "attn mask 3D shape", q: x, k: kv, v: kv,
			build: mhaWith(2, func(b *mhalib.MHABuilder) { b.AttnMask(mhalib.MaskBlockedWhereTrue(boolConst(b.Graph(), 2, 3, 4))) }),
			want:  []string{"attn_mask", "[2 3 4]", "B·h"}},
		{name: "bool mask of floats", q: x, k: kv, v: kv,
			build: mhaWith(2, func(b *mhalib.MHABuilder) {
				b.AttnMask(mhalib.MaskBlockedWhereTrue(Const(b.Graph(), zeros(f64, 3, 4))))
			}), want: []string{"attn_mask", "(Float64)[3 4]", "Bool"}},
		{name: "additive mask dtype", q: x, k: kv, v: kv,
			build: mhaWith(2, func(b *mhalib.MHABuilder) { b.AttnMask(mhalib.MaskAdditive(Const(b.Graph(), zeros(f32, 3, 4)))) }),
			want:  []string{"attn_mask", "(Float32)[3 4]", "Float64"}},
		{name: "key padding shape", q: x, k: kv, v: kv,
			build: mhaWith(2, func(b *mhalib.MHABuilder) { b.KeyPaddingMask(mhalib.MaskBlockedWhereTrue(boolConst(b.Graph(), 2, 3))) }),
			want:  []string{"key_padding_mask", "[2 3]", "Lk=4"}},
		{name: "Lq = 0", q: zeros(f64, 2, 0, 8), k: kv, v: kv, build: mhaWith(2, nil), want: []string{"query", "[2 0 8]", "Lq = 0"}},
		{name: "Lk = 0", q: x, k: zeros(f64, 2, 0, 8), v: zeros(f64, 2, 0, 8), build: mhaWith(2, nil), want: []string{"key", "[2 0 8]", "Lk = 0"}},
		{name: "key dtype", q: x, k: zeros(f32, 2, 4, 8), v: kv, build: mhaWith(2, nil), want: []string{"key", "(Float32)[2 4 8]", "(Float64)[2 3 8]", "dtype"}},
		{name: "value dtype", q: x, k: kv, v: zeros(f32, 2, 4, 8), build: mhaWith(2, nil), want: []string{"value", "(Float32)[2 4 8]", "dtype"}},
		{name: "fused with kdim != E", q: x, k: zeros(f64, 2, 4, 5), v: kv,
			build: mhaWith(2, func(b *mhalib.MHABuilder) { b.SeparateProjections(false) }), want: []string{"SeparateProjections", "[2 4 5]", "kdim"}},
		{name: "dropout rate", q: x, k: kv, v: kv, build: mhaWith(2, func(b *mhalib.MHABuilder) { b.Dropout(context.New(), 1.5) }), want: []string{"Dropout", "1.5"}},
		{name: "sdpa rank", q: x, k: kv, v: kv, build: sdpa(nil), want: []string{"q", "[2 3 8]", "rank 4"}},
		{name: "sdpa dk", q: zeros(f64, 2, 2, 3, 4), k: zeros(f64, 2, 2, 5, 3), v: zeros(f64, 2, 2, 5, 3), build: sdpa(nil),
			want: []string{"k", "[2 2 5 3]", "[2 2 3 4]", "dk=4"}},
		{name: "sdpa Lk = 0", q: zeros(f64, 2, 2, 3, 4), k: zeros(f64, 2, 2, 0, 4), v: zeros(f64, 2, 2, 0, 4), build: sdpa(nil),
			want: []string{"k", "[2 2 0 4]", "Lk = 0"}},
		{name: "sdpa mask shape", q: zeros(f64, 2, 2, 3, 4), k: zeros(f64, 2, 2, 5, 4), v: zeros(f64, 2, 2, 5, 4),
			build: sdpa(func(b *mhalib.SDPABuilder) {
				b.AttnMask(mhalib.MaskAttendWhereTrue(boolConst(b.Graph(), 2, 2, 3, 4)))
			}), want: []string{"mask", "[2 2 3 4]", "Lk=5"}},
		// The options MultiHeadAttention and PreLNBlock share with SDPA and Flash (AttentionOptions).
		{name: "mha window alignment", q: x, k: kv, v: kv,
			build: mhaWith(2, func(b *mhalib.MHABuilder) { b.Window(1, 0, mhalib.Alignment(5)) }), want: []string{"Window", "unknown alignment 5"}},
		{name: "mha alibi slopes", q: x, k: kv, v: kv,
			build: mhaWith(2, func(b *mhalib.MHABuilder) { b.ALiBi([]float64{1}) }), want: []string{"ALiBi", "1 slopes for 2 query heads"}},
		{name: "mha alibi with zero attn", q: x, k: kv, v: kv,
			build: mhaWith(2, func(b *mhalib.MHABuilder) { b.ALiBi(mhalib.ALiBiSlopes(2)).AddZeroAttn(true) }),
			want:  []string{"ALiBi", "add_zero_attn"}},
		{name: "mha sinks shape", q: x, k: kv, v: kv,
			build: mhaWith(2, func(b *mhalib.MHABuilder) { b.Sinks(Const(b.Graph(), zeros(f64, 3))) }), want: []string{"Sinks", "(Float64)[3]", "want [2]"}},
		{name: "mha soft-cap", q: x, k: kv, v: kv,
			build: mhaWith(2, func(b *mhalib.MHABuilder) { b.SoftCap(-1) }), want: []string{"SoftCap", "-1"}},
		{name: "dropout without ctx", q: x, k: kv, v: kv,
			build: mhaWith(2, func(b *mhalib.MHABuilder) { b.Dropout(nil, 0.1) }), want: []string{"Dropout", "nil ctx"}},
		{name: "flash dropout", q: q4, k: kv4, v: kv4,
			build: func(ctx *context.Context, q, k, v *Node) *Node {
				return mhalib.FlashAttention(q, k, v).Dropout(ctx, 0.1).Done()
			},
			want: []string{"Dropout", "FlashAttention never forms the weights"}},
		{name: "block window alignment", q: x, k: kv, v: kv,
			build: func(ctx *context.Context, q, k, v *Node) *Node {
				return Add(mhalib.PreLNBlock(ctx, q, 2).Window(1, 0, mhalib.Alignment(7)).Done(), ReduceAllSum(Add(ReduceAllSum(k), ReduceAllSum(v))))
			},
			want: []string{"Window", "unknown alignment 7"}},
		{name: "mla causal", q: x, k: kv, v: kv,
			build: func(ctx *context.Context, q, k, v *Node) *Node {
				cfg := mhalib.MLAConfig{Heads: 2, HeadDim: 4, RopeDim: 2, ValueDim: 4, Latent: 3}
				y := mhalib.MultiHeadLatentAttention(ctx, q, cfg).Causal(mhalib.Causal(7)).Done()
				return Add(y, ReduceAllSum(Add(ReduceAllSum(k), ReduceAllSum(v))))
			},
			want: []string{"Causal", "unknown value 7"}},
		{name: "block input rank", q: zeros(f64, 3, 8), k: kv, v: kv,
			build: func(ctx *context.Context, q, k, v *Node) *Node {
				return Add(mhalib.PreLNBlock(ctx, q, 2).Done(), ReduceAllSum(Add(ReduceAllSum(k), ReduceAllSum(v))))
			},
			want: []string{"x", "[3 8]"}},
	}
	return cases
}

// checkBadInput runs the case through Exec and checks the returned error.
func checkBadInput(t *testing.T, backend backends.Backend, c errorCase) {
	if !backend.HasSharedBuffers() && (c.q.Size() == 0 || c.k.Size() == 0 || c.v.Size() == 0) {
		t.Skip("an input with no elements on a backend without shared host buffers (xla:cuda): GoMLX's Exec " +
			"panics copying it to the device (go-xla v0.1.4) before any graph is built; Program.Run rejects it " +
			"first (TestProgramRunRejectsEmptyTensors)")
	}
	exec, err := context.NewExec(backend, context.New(), func(ctx *context.Context, q, k, v *Node) *Node {
		return c.build(ctx, q, k, v)
	})
	if err != nil {
		t.Fatal(err)
	}
	err = execRecovering(exec, c.q, c.k, c.v)
	if err == nil {
		t.Fatalf("no error")
	}
	msg := err.Error()
	for _, w := range c.want {
		if !strings.Contains(msg, w) {
			t.Errorf("error %q does not mention %q", firstLine(msg), w)
		}
	}
	if !strings.Contains(msg, "mhalib: ") {
		t.Errorf("error %q lacks the package prefix", firstLine(msg))
	}
	if !errors.Is(err, mhalib.ErrInvalidArgument) {
		t.Errorf("errors.Is(err, ErrInvalidArgument) is false for %q", firstLine(msg))
	}
}

// execRecovering runs exec on args and returns its error, or a panic as an error: on xla:cuda
// GoMLX's Exec panicked copying a tensor with no elements to the device (go-xla v0.1.4,
// "reflect: slice index out of range"), which aborted every test after this one; the case fails
// with that message instead.
func execRecovering(exec *context.Exec, args ...any) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("Exec panicked (not an error returned): %v", r)
		}
	}()
	_, err = exec.Exec(args...)
	return err
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

func TestForwardReturnsErrors(t *testing.T) {
	backendtest.Run(t, func(t *testing.T, backend backends.Backend) {
		x := zeros(dtypes.Float64, 2, 3, 10)
		_, _, err := mhalib.Forward(backend, context.New(), x, x, x, 3, nil)
		if err == nil || !strings.Contains(err.Error(), "numHeads") || !errors.Is(err, mhalib.ErrInvalidArgument) {
			t.Fatalf("Forward with 3 heads for D=10: err = %v", err)
		}
		out, w, err := mhalib.Forward(backend, context.New(), x, x, x, 2, func(b *mhalib.MHABuilder) {
			b.Causal(mhalib.CausalTopLeft)
		})
		if err != nil {
			t.Fatal(err)
		}
		if got := out.Shape().Dimensions; got[0] != 2 || got[1] != 3 || got[2] != 10 {
			t.Errorf("output shape %s", out.Shape())
		}
		if got := w.Shape().Dimensions; len(got) != 4 || got[1] != 2 || got[3] != 3 {
			t.Errorf("weights shape %s", w.Shape())
		}
	})
}

func TestTry(t *testing.T) {
	if err := mhalib.Try(func() {}); err != nil {
		t.Errorf("Try(no panic) = %v", err)
	}
	err := mhalib.Try(func() { mhalib.HeadSizesFor(-1, 2) })
	if !errors.Is(err, mhalib.ErrInvalidArgument) {
		t.Errorf("Try: %v", err)
	}
	defer func() {
		if r := recover(); r != "not an error" {
			t.Errorf("Try re-panicked with %v", r)
		}
	}()
	_ = mhalib.Try(func() { panic("not an error") })
}

// Try returns the errors of bad input but re-panics runtime errors (bugs): an index out of
// range and a nil dereference come out of Try as the same runtime.Error panics.
func TestTryRepanicsRuntimeErrors(t *testing.T) {
	var nilCache *mhalib.KVCache
	for _, c := range []struct {
		name string
		fn   func()
	}{
		{"index out of range", func() {
			s := []int{1, 2}
			i := len(s)
			_ = s[i]
		}},
		{"nil dereference", func() { _ = nilCache.Len() }},
	} {
		t.Run(c.name, func(t *testing.T) {
			var err error
			r := func() (r any) {
				defer func() { r = recover() }()
				err = mhalib.Try(c.fn)
				return nil
			}()
			if _, ok := r.(runtime.Error); !ok {
				t.Errorf("Try returned err = %v and panicked with %v (%T), want a runtime.Error panic", err, r, r)
			}
		})
	}
}
