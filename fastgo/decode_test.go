package fastgo_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/gomlx/gomlx/backends"
	"github.com/gomlx/gomlx/pkg/core/dtypes"
	. "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/tensors"
	"github.com/gomlx/gomlx/pkg/ml/context"

	"github.com/mhalab/mhalab/fastgo"
	"github.com/mhalab/mhalab/mhalib"
)

// TestDecodeGroupRows decodes with mhalib's KV cache (CachedSelfAttention, 4 query heads of
// 64, 4, 2 and 1 key/value heads, a cache of 64 positions in chunks of 16): a prompt of 5
// tokens, then one token at a time across two chunk boundaries to position 40 — with groupRows
// (the grouped weighted sums of the one-token steps) and without (gemv and the GEMM, which
// TestGEMVAgainstFloat64 and TestGEMMAgainstFloat64 check), and compares every step's output,
// in every vector mode of the CPU (fastgo.VecModes: AVX-512, AVX2+FMA — also on an AVX-512 CPU —
// and plain Go, where groupRows declines). (Against GoMLX's own kernels, MHALAB_FASTGO=0,
// v0.26's parallel executor deadlocked in its DotGeneral on these many small products.) Error
// model as TestMultiHeadAttentionMatchesGoMLX: |with − without| ≤ 8·(k+1)·u·max|without| per
// step, k = max(positions, E).
func TestDecodeGroupRows(t *testing.T) {
	backend := newBackend(t)
	rng := rand.New(rand.NewPCG(testSeed(t), 29))
	tokens := make([]*tensors.Tensor, decodeLast+1-decodePrompt)
	tokens[0] = randomInput(rng, dtypes.Float32, []int{1, decodePrompt, decodeHq * decodeDk}, false)
	for i := 1; i < len(tokens); i++ {
		tokens[i] = randomInput(rng, dtypes.Float32, []int{1, 1, decodeHq * decodeDk}, false)
	}
	for _, mode := range fastgo.VecModes() {
		for _, hkv := range []int{4, 2, 1} {
			t.Run(fmt.Sprintf("%s/Hkv=%d", mode, hkv), func(t *testing.T) {
				fastgo.WithVecMode(t, mode)
				if mode != "go" && !fastgo.HasGroupRows() {
					t.Fatalf("groupRows has no kernels in mode %s", mode)
				}
				checkDecodeGroupRows(t, backend, tokens, hkv)
			})
		}
	}
}

// The decoding of TestDecodeGroupRows: query heads, features per head, cache positions, chunk
// length, prompt tokens, last position.
const decodeHq, decodeDk, decodeMaxLen, decodeChunk, decodePrompt, decodeLast = 4, 64, 64, 16, 5, 40

// checkDecodeGroupRows decodes tokens with hkv key/value heads with and without groupRows (in the
// current vector mode) and compares the steps (TestDecodeGroupRows).
func checkDecodeGroupRows(t *testing.T, backend backends.Backend, tokens []*tensors.Tensor, hkv int) {
	const E = decodeHq * decodeDk
	decode := func(on bool) [][]float64 {
		defer fastgo.SetGroupRows(fastgo.SetGroupRows(on))
		cache, err := mhalib.NewKVCache(1, hkv, decodeMaxLen, decodeDk, decodeDk)
		if err != nil {
			t.Fatal(err)
		}
		if err := cache.SetChunkLen(decodeChunk); err != nil {
			t.Fatal(err)
		}
		ctx := mhalib.WithInit(context.New(), mhalib.InitXavierUniform)
		ctx.SetParam(context.ParamInitialSeed, int64(1))
		exec := context.MustNewExec(backend, ctx, func(ctx *context.Context, x, p *Node) *Node {
			return mhalib.CachedSelfAttention(ctx, x, decodeHq, cache, p).KVHeads(hkv).Done() // [1, n, E]
		})
		defer exec.Finalize()
		var outs [][]float64
		for _, x := range tokens {
			pos, err := cache.Advance(x.Shape().Dim(1))
			if err != nil {
				t.Fatal(err)
			}
			outs = append(outs, flat64(exec.MustExec(x, tensors.FromScalar(int32(pos)))[0]))
		}
		return outs
	}
	before := fastgo.GroupRowsCalls.Load()
	fast := decode(true)
	if hkv < decodeHq && fastgo.HasGroupRows() && fastgo.GroupRowsCalls.Load() == before {
		t.Errorf("groupRows computed no product (%s)", fastgo.Status())
	}
	without := decode(false)
	for s := range fast {
		scale := 0.0
		for _, v := range without[s] {
			scale = math.Max(scale, math.Abs(v))
		}
		bound := 8 * float64(max(decodeMaxLen, E)+1) * 0x1p-24 * scale
		for j := range fast[s] {
			if d := math.Abs(fast[s][j] - without[s][j]); !(d <= bound) {
				t.Fatalf("step %d [%d]: with groupRows %g, without %g: difference %.3g > %.3g", s, j, fast[s][j], without[s][j], d, bound)
			}
		}
	}
}
