package nb

import (
	"fmt"
	"math"
	"strings"

	"github.com/gomlx/gomlx/pkg/ml/context"
	"github.com/mhalab/mhalab/mhalib"
)

// Helpers and pictures for notebook 10 (attention in today's LLMs).

// CacheBytes returns the bytes of ctx's KV-cache tensors: the variables in a "kv_cache" scope
// (mhalib.KVCache.Append creates them there), measured from their shapes.
func CacheBytes(ctx *context.Context) int64 {
	var total int64
	for v := range ctx.IterVariables() {
		if strings.Contains(v.Scope(), "kv_cache") {
			total += int64(v.Shape().Memory())
		}
	}
	return total
}

// RenormaliseRows multiplies each weight w[i][j] by factor(i, j) and rescales each row to sum 1
// (softmax(s + log factor) from softmax(s)).
func RenormaliseRows(w [][]float64, factor func(i, j int) float64) [][]float64 {
	out := make([][]float64, len(w))
	for i, row := range w {
		out[i] = make([]float64, len(row))
		sum := 0.0
		for j, x := range row {
			out[i][j] = x * factor(i, j)
			sum += out[i][j]
		}
		for j := range out[i] {
			out[i][j] /= sum
		}
	}
	return out
}

// CausalRowStats compares causal weights a and b [L][L] (row i sees keys 0 … i): the largest
// ratio of two weights within a row of a, the largest spread (max − min) within a row of the
// ratios a_ij / b_ij, the largest row sum of a, and the largest |a − b|.
func CausalRowStats(a, b [][]float64) (ratio, spread, sum, diff float64) {
	for i := range a {
		lo, hi, rlo, rhi, s := math.Inf(1), 0.0, math.Inf(1), 0.0, 0.0
		for j := range a[i][:i+1] {
			lo, hi, s = min(lo, a[i][j]), max(hi, a[i][j]), s+a[i][j]
			rlo, rhi = min(rlo, a[i][j]/b[i][j]), max(rhi, a[i][j]/b[i][j])
		}
		for j := range a[i] {
			diff = max(diff, math.Abs(a[i][j]-b[i][j]))
		}
		ratio, spread, sum = max(ratio, hi/lo), max(spread, rhi-rlo), max(sum, s)
	}
	return ratio, spread, sum, diff
}

// GQAGroups draws which key/value head each query head reads with hq query heads and hkv
// key/value heads (hkv divides hq): query head h uses key/value head h / (hq/hkv).
func GQAGroups(hq, hkv int) string {
	g := hq / hkv
	title := fmt.Sprintf("Hq %d, Hkv %d (groups of %d)", hq, hkv, g)
	return BlockGrid(title, "query head", "kv head", hq, hkv, 22, 16, func(h, j int) Tile {
		if h/g == j {
			return Tile{Colour: "#3182bd", Label: fmt.Sprint(h)}
		}
		return Tile{}
	}, map[string]string{"#3182bd": "query head reads this kv head"})
}

// FlashTileGrid draws the score tiles of an lq × lk attention in cells of bq rows × bk keys:
// blue where FlashAttention computes scores (tiles, from mhalib.FlashTiles) and some pair is
// visible, light blue where it computes a cell that is wholly masked (a query block that is
// still in progress), white where nothing is computed. sees(i, j) says whether query i may see
// key j. It also returns the number of cells computed.
func FlashTileGrid(title string, tiles []mhalib.FlashTile, lq, lk, bq, bk int, sees func(i, j int) bool) (string, int) {
	rows, cols := (lq+bq-1)/bq, (lk+bk-1)/bk
	computed := make([]bool, rows*cols)
	for _, t := range tiles {
		for r := t.Row0 / bq; r*bq < t.Row1; r++ {
			for c := t.Col0 / bk; c*bk < t.Col1; c++ {
				computed[r*cols+c] = true
			}
		}
	}
	n := 0
	for _, c := range computed {
		if c {
			n++
		}
	}
	useful := func(r, c int) bool {
		for i := r * bq; i < min((r+1)*bq, lq); i++ {
			for j := c * bk; j < min((c+1)*bk, lk); j++ {
				if sees(i, j) {
					return true
				}
			}
		}
		return false
	}
	legend := map[string]string{"#3182bd": "computed", "#c6dbef": "computed, all masked", "#ffffff": "skipped"}
	grid := BlockGrid(title, "query block", "key block", rows, cols, 14, 14, func(r, c int) Tile {
		switch {
		case computed[r*cols+c] && useful(r, c):
			return Tile{Colour: "#3182bd"}
		case computed[r*cols+c]:
			return Tile{Colour: "#c6dbef"}
		}
		return Tile{}
	}, legend)
	return grid, n
}
