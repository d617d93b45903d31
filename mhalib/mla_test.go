package mhalib_test

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/gomlx/gomlx/backends"
	"github.com/gomlx/gomlx/pkg/core/dtypes"
	. "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/tensors"
	"github.com/gomlx/gomlx/pkg/ml/context"

	"github.com/mhalab/mhalab/internal/backendtest"
	"github.com/mhalab/mhalab/mhalib"
	"github.com/mhalab/mhalab/mhalib/kvcatalog"
	"github.com/mhalab/mhalab/mhalib/mhatest"
)

// randMLAParams draws MLA weights for the reference; dcq > 0 adds query compression.
func randMLAParams(rng *rand.Rand, E, H, dh, dr, dv, dc, dcq int) mhatest.MLAParams {
	p := mhatest.MLAParams{Heads: H, HeadDim: dh, RopeDim: dr, ValueDim: dv, Latent: dc, RoPE: mhatest.RoPESpec{Theta: 10000}}
	qIn := E
	if dcq > 0 {
		p.WDQ, qIn = mhatest.Rand(rng, -0.5, 0.5, dcq, E), dcq
	}
	p.WUQ, p.WQR = mhatest.Rand(rng, -0.5, 0.5, H*dh, qIn), mhatest.Rand(rng, -0.5, 0.5, H*dr, qIn)
	p.WDKV, p.WKR = mhatest.Rand(rng, -0.5, 0.5, dc, E), mhatest.Rand(rng, -0.5, 0.5, dr, E)
	p.WUK, p.WUV = mhatest.Rand(rng, -0.5, 0.5, H*dh, dc), mhatest.Rand(rng, -0.5, 0.5, H*dv, dc)
	p.WO = mhatest.Rand(rng, -0.5, 0.5, E, H*dv)
	return p
}

// mlaContext loads the reference weights into the variables MultiHeadLatentAttention uses.
func mlaContext(p mhatest.MLAParams, dt dtypes.DType) *context.Context {
	ctx := context.New()
	s := ctx.In("MultiHeadLatentAttention")
	for name, w := range map[string]*mhatest.Tensor{"q_down": p.WDQ, "q_up": p.WUQ, "q_rope": p.WQR, "kv_down": p.WDKV,
		"k_rope": p.WKR, "k_up": p.WUK, "v_up": p.WUV, "out": p.WO} {
		if w != nil {
			s.In(name).VariableWithValue("weight", toTensor(w, dt))
		}
	}
	return ctx
}

func mlaConfigOf(p mhatest.MLAParams) mhalib.MLAConfig {
	c := mhalib.MLAConfig{Heads: p.Heads, HeadDim: p.HeadDim, RopeDim: p.RopeDim, ValueDim: p.ValueDim, Latent: p.Latent}
	if p.WDQ != nil {
		c.QueryLatent = p.WDQ.Shape[0]
	}
	return c
}

// MLA, explicit and absorbed, against mhatest.MLA: output and gradient of x, with and without
// query compression and causal masking.
func TestMultiHeadLatentAttention(t *testing.T) {
	backendtest.Run(t, func(t *testing.T, backend backends.Backend) {
		for _, dcq := range []int{0, 5} {
			for _, causal := range []mhalib.Causal{mhalib.NoCausal, mhalib.CausalTopLeft} {
				for _, absorbed := range []bool{false, true} {
					name := fmt.Sprintf("dcq%d/causal=%v/absorbed=%v", dcq, causal, absorbed)
					t.Run(name, func(t *testing.T) {
						rng := rand.New(rand.NewPCG(seedOf(name), 9))
						p := randMLAParams(rng, 8, 3, 4, 2, 5, 6, dcq)
						x := mhatest.Rand(rng, -1, 1, 2, 5, 8)
						cot := mhatest.Rand(rng, -1, 1, 2, 5, 8)
						want, _ := mhatest.MLA(p, x, causalRef(causal))
						dt := dtypes.Float64
						exec := context.MustNewExec(backend, mlaContext(p, dt), func(ctx *context.Context, x, cot *Node) []*Node {
							y := mhalib.MultiHeadLatentAttention(ctx, x, mlaConfigOf(p)).Causal(causal).Absorbed(absorbed).Done()
							return []*Node{y, Gradient(ReduceAllSum(Mul(y, cot)), x)[0]}
						})
						res, err := exec.Exec(toTensor(x, dt), toTensor(cot, dt))
						if err != nil {
							t.Fatal(err)
						}
						assertClose(t, "output", res[0], want, 1e-12)
						loss := func() float64 { y, _ := mhatest.MLA(p, x, causalRef(causal)); return mhatest.Loss(y, cot) }
						assertClose(t, "gradient", res[1], mhatest.NumGrad(loss, x, 1e-6), 1e-7)
					})
				}
			}
		}
	})
}

// Decoding with the latent cache (prefill 3, then 1, 1, 2) gives the rows of the full causal
// MLA over the whole sequence.
func TestMLALatentCache(t *testing.T) {
	backendtest.Run(t, func(t *testing.T, backend backends.Backend) {
		rng := rand.New(rand.NewPCG(19, 1))
		p := randMLAParams(rng, 8, 2, 4, 2, 3, 6, 0)
		const B, L, E = 2, 7, 8
		x := mhatest.Rand(rng, -1, 1, B, L, E)
		want, _ := mhatest.MLA(p, x, mhatest.TopLeft)
		cache, err := mhalib.NewKVCache(B, 1, L, p.Latent, p.RopeDim)
		if err != nil {
			t.Fatal(err)
		}
		dt := dtypes.Float64
		ctx := mlaContext(p, dt)
		execs := map[int]*context.Exec{} // one per step length n
		for _, n := range []int{3, 1, 1, 2} {
			pos, err := cache.Advance(n)
			if err != nil {
				t.Fatal(err)
			}
			if execs[n] == nil {
				execs[n] = context.MustNewExec(backend, ctx, func(ctx *context.Context, x, pos *Node) *Node {
					return mhalib.MultiHeadLatentAttention(ctx, x, mlaConfigOf(p)).Cache(cache, pos).Done()
				})
			}
			rows := mhatest.New(B, n, E)
			wantRows := mhatest.New(B, n, E)
			for b := 0; b < B; b++ {
				for i := 0; i < n; i++ {
					for e := 0; e < E; e++ {
						rows.Set(x.At(b, pos+i, e), b, i, e)
						wantRows.Set(want.At(b, pos+i, e), b, i, e)
					}
				}
			}
			res, err := execs[n].Exec(toTensor(rows, dt), tensors.FromScalar(int32(pos)))
			if err != nil {
				t.Fatal(err)
			}
			assertClose(t, fmt.Sprintf("step at %d", pos), res[0], wantRows, 1e-12)
		}
	})
}

// What MLA caches per token and layer against MHA and GQA, DeepSeek-V2-Lite's dimensions:
// (dc + dr) = 576 numbers, where its 16 heads as MHA would cache 16·(192 + 128) = 5120 and GQA
// with 2 groups 640 — the paper's Table 1 ((dc + dR)·l for MLA, 2·nh·dh·l for MHA).
func TestMLACacheBytesPerToken(t *testing.T) {
	mla := kvcatalog.Config{Layers: 1, Latent: 512, RopeDim: 64, Context: 1}
	mha := kvcatalog.Config{Layers: 1, KVHeads: 16, HeadDim: 192, ValueHeadDim: 128, Context: 1}
	gqa := mha
	gqa.KVHeads = 2
	for _, c := range []struct {
		cfg  kvcatalog.Config
		want int64
	}{{mla, 576 * 2}, {mha, 5120 * 2}, {gqa, 640 * 2}} {
		if got, err := kvcatalog.Bytes(c.cfg); err != nil || got != c.want {
			t.Errorf("%+v: %d bytes (%v), want %d", c.cfg, got, err, c.want)
		}
	}
}
