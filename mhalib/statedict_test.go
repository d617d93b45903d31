package mhalib_test

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/gomlx/gomlx/backends"
	"github.com/gomlx/gomlx/pkg/core/dtypes"
	. "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/tensors"
	"github.com/gomlx/gomlx/pkg/ml/context"

	"github.com/mhalab/mhalab/internal/backendtest"
	"github.com/mhalab/mhalab/mhalib"
	"github.com/mhalab/mhalab/mhalib/mhatest"
)

func TestLoadStateDictErrors(t *testing.T) {
	rng := rand.New(rand.NewPCG(10, 10))
	p := randParams(rng, 8, 2, 8, 8, nil, true, true, false)
	good := func() map[string]*tensors.Tensor { return stateDict(p, true, dtypes.Float64) }
	for _, tc := range []struct {
		name   string
		modify func(sd map[string]*tensors.Tensor)
		want   []string
	}{
		{"unknown key", func(sd map[string]*tensors.Tensor) { sd["in_proj.weight"] = sd["in_proj_weight"] }, []string{"in_proj.weight", "unknown"}},
		{"bad shape", func(sd map[string]*tensors.Tensor) { sd["in_proj_bias"] = zeros(dtypes.Float64, 23) }, []string{"in_proj_bias", "[23]", "[24]"}},
		{"missing out_proj.weight", func(sd map[string]*tensors.Tensor) { delete(sd, "out_proj.weight") }, []string{"out_proj.weight", "missing"}},
		{"fused and separate", func(sd map[string]*tensors.Tensor) { sd["q_proj_weight"] = zeros(dtypes.Float64, 8, 8) }, []string{"in_proj_weight", "separate"}},
		{"bias_k alone", func(sd map[string]*tensors.Tensor) { delete(sd, "bias_v") }, []string{"bias_k", "bias_v"}},
		{"dtype", func(sd map[string]*tensors.Tensor) { sd["out_proj.bias"] = zeros(dtypes.Float32, 8) }, []string{"out_proj.bias", "Float32", "Float64"}},
		{"no projection", func(sd map[string]*tensors.Tensor) { delete(sd, "in_proj_weight") }, []string{"in_proj_weight", "missing"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sd := good()
			tc.modify(sd)
			err := mhalib.LoadStateDict(context.New(), "mha", sd)
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
		})
	}
	// A second load with a different E into the same scope names the existing variable's shape.
	ctx := context.New()
	if err := mhalib.LoadStateDict(ctx, "mha", good()); err != nil {
		t.Fatal(err)
	}
	p2 := randParams(rng, 4, 2, 4, 4, nil, true, true, false)
	err := mhalib.LoadStateDict(ctx, "mha", stateDict(p2, true, dtypes.Float64))
	if err == nil || !strings.Contains(err.Error(), "existing variable") {
		t.Errorf("reload with another E: %v", err)
	}
}

// Without explicit options, the builder follows the loaded layout: separate projections,
// no bias, bias_kv. StateDict returns what was loaded.
func TestBuilderFollowsLoadedLayout(t *testing.T) {
	backendtest.Run(t, func(t *testing.T, backend backends.Backend) {
		rng := rand.New(rand.NewPCG(12, 12))
		B, Lq, Lk, E, h := 2, 3, 4, 8, 2
		p := randParams(rng, E, h, E, E, nil, false, true, false)
		q, k, v := mhatest.Rand(rng, -1, 1, B, Lq, E), mhatest.Rand(rng, -1, 1, B, Lk, E), mhatest.Rand(rng, -1, 1, B, Lk, E)
		want, _, err := mhatest.MHA(p, q, k, v, mhatest.MHAOptions{})
		if err != nil {
			t.Fatal(err)
		}
		ctx := context.New()
		sd := stateDict(p, false, dtypes.Float64)
		if err := mhalib.LoadStateDict(ctx, mhalib.DefaultScope, sd); err != nil {
			t.Fatal(err)
		}
		exec := context.MustNewExec(backend, ctx, func(ctx *context.Context, q, k, v *Node) *Node {
			return mhalib.MultiHeadAttention(ctx, q, k, v, h).Done()
		})
		got := exec.MustExec(toTensor(q, dtypes.Float64), toTensor(k, dtypes.Float64), toTensor(v, dtypes.Float64))[0]
		assertClose(t, "output", got, want, 1e-12)
		back, err := mhalib.StateDict(ctx, mhalib.DefaultScope)
		if err != nil {
			t.Fatal(err)
		}
		if len(back) != len(sd) {
			t.Fatalf("StateDict has %d keys, loaded %d", len(back), len(sd))
		}
		for key, t0 := range sd {
			if back[key] == nil || !back[key].Equal(t0) {
				t.Errorf("StateDict[%q] differs from what was loaded", key)
			}
		}
	})
}

// Options that contradict loaded weights are errors, not silently fresh weights.
func TestBuilderRejectsOptionsAgainstLoadedWeights(t *testing.T) {
	backendtest.Run(t, func(t *testing.T, backend backends.Backend) {
		rng := rand.New(rand.NewPCG(13, 13))
		p := randParams(rng, 8, 2, 8, 8, nil, false, false, false)
		for _, tc := range []struct {
			name  string
			fused bool
			opt   func(b *mhalib.MHABuilder)
			want  string
		}{
			{"separate over fused", true, func(b *mhalib.MHABuilder) { b.SeparateProjections(true) }, "SeparateProjections"},
			{"fused over separate", false, func(b *mhalib.MHABuilder) { b.SeparateProjections(false) }, "SeparateProjections"},
			{"bias over no bias", true, func(b *mhalib.MHABuilder) { b.UseBias(true) }, "UseBias"},
			{"bias_kv over none", true, func(b *mhalib.MHABuilder) { b.AddBiasKV(true) }, "AddBiasKV"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				ctx := newCtx(t, p, tc.fused, dtypes.Float64)
				exec := context.MustNewExec(backend, ctx, func(ctx *context.Context, x *Node) *Node {
					b := mhalib.MultiHeadAttention(ctx, x, x, x, 2)
					tc.opt(b)
					return b.Done()
				})
				_, err := exec.Exec(zeros(dtypes.Float64, 1, 2, 8))
				if err == nil || !strings.Contains(err.Error(), tc.want) {
					t.Errorf("err = %v, want one naming %s", err, tc.want)
				}
			})
		}
	})
}

// A state_dict taken from a context and loaded back into it (or into another one) must leave the
// variables readable: StateDict returns copies, and loading a variable's own tensor is a no-op.
func TestStateDictRoundTripSameContext(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	p := randParams(rng, 4, 2, 4, 4, nil, true, false, false)
	ctx := context.New()
	if err := mhalib.LoadStateDict(ctx, "mha", stateDict(p, true, dtypes.Float64)); err != nil {
		t.Fatal(err)
	}
	sd, err := mhalib.StateDict(ctx, "mha")
	if err != nil {
		t.Fatal(err)
	}
	for round := 0; round < 2; round++ {
		if err := mhalib.LoadStateDict(ctx, "mha", sd); err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		back, err := mhalib.StateDict(ctx, "mha")
		if err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		for k, want := range sd {
			got := back[k]
			if got == nil || got.DType() != dtypes.Float64 || !got.Shape().Equal(want.Shape()) {
				t.Fatalf("round %d: %s reads back as %v, want %s", round, k, got, want.Shape())
			}
			if !reflectEqual(got.Value(), want.Value()) {
				t.Fatalf("round %d: %s changed: %v vs %v", round, k, got.Value(), want.Value())
			}
		}
	}
}

func reflectEqual(a, b any) bool { return fmt.Sprint(a) == fmt.Sprint(b) }
