package fastgo_test

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/gomlx/gomlx/pkg/core/dtypes"
	. "github.com/gomlx/gomlx/pkg/core/graph"

	"github.com/mhalab/mhalab/fastgo"
	"github.com/mhalab/mhalab/internal/cpupeak"
)

// BenchmarkDotGeneral times the DotGenerals of mhalab's bench cases on the pure-Go backend, with
// fastgo ("fast") and with GoMLX's own kernel ("gomlx"), in GFLOP/s and as a share of the cores'
// float32 FMA peak (%peak, internal/cpupeak, measured once per process). XLA's products of the
// same passes, beside fastgo's: mhalab bench --suites products.
//
//	go test ./fastgo -run NONE -bench DotGeneral
//	MHALAB_FASTGO_AB=colsfirst=0,1 go test ./fastgo -run NONE -bench 'DotGeneral/minilm_proj.*/fast'
var benchDots = []struct {
	name                                 string
	lhs, rhs                             []int
	lContract, lBatch, rContract, rBatch []int
}{
	// seed003 B32 L128 E512 h8: in-projection x[B·L, E]·W[3E, E]ᵀ, scores q·kᵀ per head, weights·v.
	{"seed003_inproj_4096x512x1536", []int{4096, 512}, []int{1536, 512}, []int{1}, nil, []int{1}, nil},
	{"seed003_scores_256x128x128x64", []int{256, 128, 64}, []int{256, 128, 64}, []int{2}, []int{0}, []int{2}, []int{0}},
	{"seed003_values_256x128x64x128", []int{256, 128, 128}, []int{256, 128, 64}, []int{2}, []int{0}, []int{1}, []int{0}},
	{"seed003_proj_4096x512x512", []int{4096, 512}, []int{512, 512}, []int{1}, nil, []int{1}, nil},
	// llm B8 L1024 E768 h12: one projection.
	{"llm_proj_8192x768x768", []int{8192, 768}, []int{768, 768}, []int{1}, nil, []int{1}, nil},
	// the same products in the layouts mhalib's plain attention gives them: q, k [B, L, h, dk]
	// (batch axes B and h), weights [B, h, L, L] and v [B, h, L, dv].
	{"seed003_scores_bhl_32x128x8x64", []int{32, 128, 8, 64}, []int{32, 128, 8, 64}, []int{3}, []int{0, 2}, []int{3}, []int{0, 2}},
	{"seed003_values_bhl_32x8x128x128", []int{32, 8, 128, 128}, []int{32, 8, 128, 64}, []int{3}, []int{0, 1}, []int{2}, []int{0, 1}},
	// llm's flashrows tiles: a block of 160 query rows [rows, B, h, dk] (rows 6144 values apart)
	// against all keys [B, h, L, dk], and causal L 4096's 512 rows against a chunk of 512 keys.
	{"llm_rowscores_160x8x12x64_1024", []int{160, 8, 12, 64}, []int{8, 12, 1024, 64}, []int{3}, []int{1, 2}, []int{3}, []int{0, 1}},
	{"long_rowscores_512x1x8x64_512", []int{512, 1, 8, 64}, []int{512, 1, 8, 64}, []int{3}, []int{1, 2}, []int{3}, []int{1, 2}},
	// all-MiniLM-L6-v2, a batch of 32 sentences of 14 tokens, 12 heads of 32: a projection x·Wᵀ,
	// the feed-forward down-projection, and scores and weights·v per head in the layouts of
	// mhalib's plain attention (q, k [B, L, h, dk], weights [B, h, L, L]).
	{"minilm_proj_448x384x384", []int{448, 384}, []int{384, 384}, []int{1}, nil, []int{1}, nil},
	{"minilm_down_448x1536x384", []int{448, 1536}, []int{384, 1536}, []int{1}, nil, []int{1}, nil},
	{"minilm_scores_bhl_32x14x12x32", []int{32, 14, 12, 32}, []int{32, 14, 12, 32}, []int{3}, []int{0, 2}, []int{3}, []int{0, 2}},
	{"minilm_values_bhl_32x12x14x14", []int{32, 12, 14, 14}, []int{32, 14, 12, 32}, []int{3}, []int{0, 1}, []int{1}, []int{0, 2}},
	// long B1 L4096 E512 h8: scores per head [4096, 4096] over 64.
	{"long_scores_8x4096x4096x64", []int{8, 4096, 64}, []int{8, 4096, 64}, []int{2}, []int{0}, []int{2}, []int{0}},
}

func BenchmarkDotGeneral(b *testing.B) {
	backend := newBackend(b)
	for _, c := range benchDots {
		flops := 2.0
		for _, d := range c.lhs {
			flops *= float64(d)
		}
		for i, d := range c.rhs {
			if !contains(c.rContract, i) && !contains(c.rBatch, i) {
				flops *= float64(d)
			}
		}
		rng := rand.New(rand.NewPCG(1, 2))
		x, y := randomTensor(rng, dtypes.Float32, c.lhs), randomTensor(rng, dtypes.Float32, c.rhs)
		for _, name := range []string{"fast", "gomlx"} {
			b.Run(fmt.Sprintf("%s/%s", c.name, name), func(b *testing.B) {
				prev := fastgo.SetEnabled(name == "fast")
				defer fastgo.SetEnabled(prev)
				exec := MustNewExec(backend, func(x, y *Node) *Node {
					return DotGeneral(x, c.lContract, c.lBatch, y, c.rContract, c.rBatch)
				})
				exec.MustExec(x, y)[0].FinalizeAll()
				b.ResetTimer()
				start := cpuMS()
				fastgo.VecLoop(b, func(int) { exec.MustExec(x, y)[0].FinalizeAll() }) // MHALAB_FASTGO_AB alternates a knob
				reportCPU(b, start)
				gflops := flops * float64(b.N) / b.Elapsed().Seconds() / 1e9
				b.ReportMetric(gflops, "GFLOP/s")
				if peak := benchPeak(); peak > 0 {
					b.ReportMetric(100*gflops/peak, "%peak")
				}
			})
		}
	}
}

// benchPeak is the cores' float32 FMA peak in GFLOP/s on all CPUs (0 where not measured),
// measured the first time it is asked for.
var benchPeak = sync.OnceValue(func() float64 {
	r, err := cpupeak.Measure(runtime.NumCPU(), 100*time.Millisecond, 3)
	if err != nil {
		return 0
	}
	return r.GFLOPS
})

func contains(s []int, v int) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// BenchmarkAttentionLong is the attention core of the bench's long case (B1 L4096, 8 heads of
// 64): scores = q·kᵀ, softmax, ·v, on the pure-Go backend with fastgo. With -cpuprofile it shows
// where the time goes besides the matrix products.
func BenchmarkAttentionLong(b *testing.B) {
	backend := newBackend(b)
	rng := rand.New(rand.NewPCG(1, 2))
	q := randomTensor(rng, dtypes.Float32, []int{8, 4096, 64})
	exec := MustNewExec(backend, func(q *Node) *Node {
		scores := DotGeneral(q, []int{2}, []int{0}, q, []int{2}, []int{0}) // [8, 4096, 4096]
		weights := Softmax(scores, -1)
		return DotGeneral(weights, []int{2}, []int{0}, q, []int{1}, []int{0}) // [8, 4096, 64]
	})
	exec.MustExec(q)[0].FinalizeAll()
	for b.Loop() {
		exec.MustExec(q)[0].FinalizeAll()
	}
}
