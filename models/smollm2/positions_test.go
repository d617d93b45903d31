package smollm2

import (
	"math"
	"math/rand/v2"
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

// TestPositionsRoPEEqualsMhalib: the shared RoPE tables of positions.go rotate x [B, n, h, hd]
// as mhalib.RoPE (half-split, θ 1e5) rotates it in [B, h, n, hd]: bit for bit on the pure-Go
// backend (the same float64 angles, and x·R's sign moved into the sine table), within 1e-6 on
// the others (a compiler may fuse the multiply-adds differently).
func TestPositionsRoPEEqualsMhalib(t *testing.T) {
	const B, n, h, hd, pos = 1, 3, 4, 64, 97
	rng := rand.New(rand.NewPCG(29, 1))
	x := make([]float32, B*n*h*hd)
	for i := range x {
		x[i] = float32(rng.NormFloat64())
	}
	backendtest.Run(t, func(t *testing.T, backend backends.Backend) {
		out := MustExecOnceN(backend, func(x, p *Node) []*Node {
			ours := headsFirst(newPositions(p, n, hd, 1e5).rope(x))                                          // [B, h, n, hd]
			ref := mhalib.RoPE(headsFirst(x)).Theta(1e5).Convention(mhalib.RoPEHalfSplit).Position(p).Done() // [B, h, n, hd]
			return []*Node{ours, ref}
		}, tensors.FromFlatDataAndDimensions(x, B, n, h, hd), int32(pos))
		got, want := tensors.MustCopyFlatData[float32](out[0]), tensors.MustCopyFlatData[float32](out[1])
		tol := 1e-6
		if backend.Name() == "go" {
			tol = 0
		}
		worst := 0.0
		for i := range got {
			worst = max(worst, math.Abs(float64(got[i]-want[i])))
		}
		if worst > tol || math.IsNaN(worst) {
			t.Errorf("max|positions.rope − mhalib.RoPE| = %.3g > %g", worst, tol)
		}
	})
}

// TestDecodeStepNodes: the packed one-token decoding step on the pure-Go backend builds at
// most 90 graph nodes per layer (the backend runs each node on its own: per layer it was 139
// before the RoPE tables, the masks and the cache rows were shared and q/k/v and gate/up
// stacked — positions.go, fused.go).
func TestDecodeStepNodes(t *testing.T) {
	backend := packedGoBackend(t)
	m := testModel(t)
	ctx := context.New()
	m.loadVariables(ctx, true, false)
	cache, err := mhalib.NewKVCache(1, m.Config.NumKeyValueHeads, 128, m.Config.HeadDim, m.Config.HeadDim)
	if err != nil {
		t.Fatal(err)
	}
	g := NewGraph(backend, "step")
	tokens := Parameter(g, "tokens", shapes.Make(dtypes.Int32, 1, 1))
	pos := Parameter(g, "pos", shapes.Make(dtypes.Int32))
	m.StepLogits(ctx, tokens, pos, cache, "nodes", true)
	perLayer := float64(len(g.Nodes())) / float64(m.Config.NumHiddenLayers)
	t.Logf("%d nodes, %.1f per layer", len(g.Nodes()), perLayer)
	if perLayer > 90 {
		t.Errorf("%.1f nodes per layer in the decoding step, want ≤ 90", perLayer)
	}
}

// TestAppendOneWritesOneRow: the one-position cache update of the pure-Go backend (two scatters,
// appendOne) leaves a cache holding other values — a sequence before Reset — with exactly k and
// v in row pos of every head and every other row unchanged, bit for bit (−0 included), and
// returns what it stored.
func TestAppendOneWritesOneRow(t *testing.T) {
	backend := packedGoBackend(t)
	const B, h, S, hd, pos = 1, 3, 16, 8, 5
	rng := rand.New(rand.NewPCG(29, 2))
	random := func(n int) []float32 {
		x := make([]float32, n)
		for i := range x {
			x[i] = float32(rng.NormFloat64())
		}
		return x
	}
	oldK, oldV, k, v := random(B*h*S*hd), random(B*h*S*hd), random(B*h*hd), random(B*h*hd)
	k[3] = float32(math.Copysign(0, -1))
	ctx := context.New()
	scope := ctx.InAbsPath("/cache")
	scope.VariableWithValue(mhalib.VarCacheKeys, tensors.FromFlatDataAndDimensions(append([]float32(nil), oldK...), B, h, S, hd))
	scope.VariableWithValue(mhalib.VarCacheValues, tensors.FromFlatDataAndDimensions(append([]float32(nil), oldV...), B, h, S, hd))
	cache, err := mhalib.NewKVCache(B, h, S, hd, hd)
	if err != nil {
		t.Fatal(err)
	}
	exec, err := context.NewExec(backend, ctx, func(ctx *context.Context, k, v, p *Node) []*Node {
		keys, values := appendOne(ctx.InAbsPath("/cache"), cache, newPositions(p, 1, hd, 1e5), k, v)
		return []*Node{keys, values}
	})
	if err != nil {
		t.Fatal(err)
	}
	defer exec.Finalize()
	out, err := exec.Exec(tensors.FromFlatDataAndDimensions(k, B, h, 1, hd), tensors.FromFlatDataAndDimensions(v, B, h, 1, hd), int32(pos))
	if err != nil {
		t.Fatal(err)
	}
	for i, c := range []struct {
		name     string
		old, new []float32
	}{{"keys", oldK, k}, {"values", oldV, v}} {
		got := tensors.MustCopyFlatData[float32](out[i])
		stored, err := scope.GetVariable(c.name).Value()
		if err != nil {
			t.Fatal(err)
		}
		kept := tensors.MustCopyFlatData[float32](stored)
		for j := range got {
			head, row, col := j/(S*hd), j/hd%S, j%hd
			want := c.old[j]
			if row == pos {
				want = c.new[head*hd+col]
			}
			if math.Float32bits(got[j]) != math.Float32bits(want) || math.Float32bits(kept[j]) != math.Float32bits(want) {
				t.Fatalf("%s[0, %d, %d, %d] = %g (variable %g), want %g", c.name, head, row, col, got[j], kept[j], want)
			}
		}
	}
	// Reset zeroes the variables appendOne writes (a NaN of a broken sequence must not outlive
	// it: mhalib/kvreset.go); failed before appendOne recorded them with cache.Holds.
	if _, err := cache.Advance(pos + 1); err != nil {
		t.Fatal(err)
	}
	cache.Reset()
	for _, name := range []string{mhalib.VarCacheKeys, mhalib.VarCacheValues} {
		value, err := scope.GetVariable(name).Value()
		if err != nil {
			t.Fatal(err)
		}
		for j, x := range tensors.MustCopyFlatData[float32](value) {
			if x != 0 {
				t.Fatalf("after Reset %s holds %g at %d, want 0", name, x, j)
			}
		}
	}
}
