//go:build linux

package fastgo

import (
	"slices"
	"testing"
	"time"

	"github.com/mhalab/mhalab/models/gguf"
	"github.com/mhalab/mhalab/models/quant"
)

// BenchmarkWarmDecode: a decoding token's packed products as SmolLM2 runs them (30 layers of
// qkv, o, gate+up and down, Q4_1, then the Q8_0 head; ~96 MB in the layout the kernels in use
// read), on 2 workers, with the calling goroutine busy between two products for as long as the
// model's other ops take there (warmGaps: the attention before o is the longest), and the
// whole token timed by the clock — with warming (warm.go, warmAhead bytes) and without it,
// alternated token by token in one run. It reports each side's median ms per token and their
// ratio (warm-over-cold below 1: warming is faster), and the ratio of the layers' products
// alone (the head follows a gap too short to warm much of its 30 MB).
func BenchmarkWarmDecode(b *testing.B) {
	type mat struct {
		h    quant.Header
		rows []byte
		gap  time.Duration
	}
	k := quantK
	if l, ok := avx2Lanes8Kernels(); ok {
		k = l
	}
	var mats []mat
	add := func(f gguf.TensorType, rows, cols int, seed uint64, gap time.Duration) {
		m := randomPacked(b, f, rows, cols, seed)
		shape, _ := quant.CarrierShape(f, rows, cols)
		data := planar(m)
		if k.name == "avx2-lanes8" {
			data = lanes8(m)
		}
		mats = append(mats, mat{quant.Header{Format: f, Rows: rows, Cols: cols, Bt: shape[0]}, data, gap})
	}
	// warmGaps: the µs of other ops after each product of a layer in models/smollm2's
	// decoding step (its op profile, 2026-12-03, 2-core AMD EPYC): RoPE, the cache and
	// attention after qkv; residual and norm after o; SiLU after gate+up; residual and the next
	// norm after down.
	warmGaps := []time.Duration{40 * time.Microsecond, 6 * time.Microsecond, 8 * time.Microsecond, 6 * time.Microsecond}
	for l := range 30 {
		for i, s := range [][2]int{{960, 576}, {576, 576}, {3072, 576}, {576, 1536}} {
			add(gguf.TensorQ4_1, s[0], s[1], uint64(100*l+i), warmGaps[i])
		}
	}
	add(gguf.TensorQ8_0, 49152, 576, 9, 30*time.Microsecond)
	x := make([]float32, 1536)
	for i := range x {
		x[i] = float32(i%7) - 3
	}
	out := make([]float32, 49152)
	busy := func(d time.Duration) {
		for t0 := time.Now(); time.Since(t0) < d; {
		}
	}
	// token returns its elapsed time and that of its layers' products alone.
	token := func() (all, layers time.Duration) {
		t0 := time.Now()
		for i, m := range mats {
			t1 := time.Now()
			quantMatMul(k, m.h, m.rows, x[:m.h.Cols], 1, out, 2)
			if i < 120 {
				layers += time.Since(t1)
			}
			busy(m.gap)
		}
		return time.Since(t0), layers
	}
	saved := warmAhead
	defer func() { warmAhead = saved }()
	sides := []int{0, saved}
	times, layerTimes := make([][]float64, len(sides)), make([][]float64, len(sides))
	for range 3 { // settle: the order of products recorded, helpers started
		token()
	}
	for b.Loop() {
		for i, w := range sides {
			warmAhead = w
			token() // the first token after a switch runs on the other side's plan
			all, layers := token()
			times[i] = append(times[i], all.Seconds()*1e3)
			layerTimes[i] = append(layerTimes[i], layers.Seconds()*1e3)
		}
	}
	median := func(v []float64) float64 { slices.Sort(v); return v[len(v)/2] }
	cold, warm := median(times[0]), median(times[1])
	b.ReportMetric(cold, "cold-ms/token")
	b.ReportMetric(warm, "warm-ms/token")
	b.ReportMetric(warm/cold, "warm-over-cold")
	b.ReportMetric(median(layerTimes[1])/median(layerTimes[0]), "layers-warm-over-cold")
	b.Logf("%s kernels, warmAhead %d bytes, %d tokens each", k.name, saved, len(times[0]))
}
