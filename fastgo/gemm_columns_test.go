package fastgo

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// TestPlanTilesColumns checks the plans planTiles makes for a 4×64 kernel on 2 workers: the
// column tiles where A is read in place and B would be packed again per row chunk (fails with
// columnPlan returning 0), the row plan kept where A is large (llm) or read packed.
func TestPlanTilesColumns(t *testing.T) {
	for _, c := range []struct {
		name             string
		batch, m, n      int
		columnsOK        bool
		want             tiling
		wantRowPlanEqual bool // want is the row plan (columnsOK false gives the same)
	}{
		// all-MiniLM-L6-v2's projections: 2 tiles of 192 columns (was 4 row chunks, W packed 4×).
		{"minilm proj", 1, 448, 384, true, tiling{mc: 128, nc: 192, mTiles: 4, nTiles: 2, mChunks: 1, tilesPerTask: 4}, false},
		{"minilm proj, A packed", 1, 448, 384, false, tiling{mc: 128, nc: 384, mTiles: 4, nTiles: 1, mChunks: 4, tilesPerTask: 1}, true},
		// its feed-forward up-projection: 4 tiles of 384 (was 3 × 2 row chunks).
		{"minilm up", 1, 448, 1536, true, tiling{mc: 128, nc: 384, mTiles: 4, nTiles: 4, mChunks: 1, tilesPerTask: 4}, false},
		// llm's projections: A (8192 rows) is read again by each column tile: rows.
		{"llm proj", 1, 8192, 768, true, tiling{mc: 128, nc: 512, mTiles: 64, nTiles: 2, mChunks: 2, tilesPerTask: 32}, true},
		// seed003's: 4096 rows against 512 columns: rows.
		{"seed003 proj", 1, 4096, 512, true, tiling{mc: 128, nc: 512, mTiles: 32, nTiles: 1, mChunks: 4, tilesPerTask: 8}, true},
		// a SmolLM2 prompt's projection: 9 column panels split 5 + 4 would leave a worker
		// waiting (it measured 1.15× the time): rows.
		{"smollm2 prompt", 1, 64, 576, true, tiling{mc: 32, nc: 256, mTiles: 2, nTiles: 3, mChunks: 2, tilesPerTask: 1}, true},
		// 256 rows: 2 tiles of 256 columns, B packed once (was twice).
		{"m256", 1, 256, 512, true, tiling{mc: 128, nc: 256, mTiles: 2, nTiles: 2, mChunks: 1, tilesPerTask: 2}, false},
		// batched products with a task per example already: unchanged.
		{"attention scores", 256, 128, 128, true, tiling{mc: 128, nc: 128, mTiles: 1, nTiles: 1, mChunks: 1, tilesPerTask: 1}, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := planTiles(4, 64, c.batch, c.m, c.n, 2, false, c.columnsOK)
			if got != c.want {
				t.Errorf("planTiles = %+v, want %+v", got, c.want)
			}
			if rows := planTiles(4, 64, c.batch, c.m, c.n, 2, false, false); (rows == got) != c.wantRowPlanEqual {
				t.Errorf("row plan %+v, column plan %+v: equal %v, want %v", rows, got, rows == got, c.wantRowPlanEqual)
			}
		})
	}
}

// TestBusiestWork checks the list scheduling columnPlan compares plans with: tasks in order, each
// to the least-loaded worker.
func TestBusiestWork(t *testing.T) {
	for _, c := range []struct {
		tasks         []int
		workers, want int
	}{{[]int{5, 4}, 2, 5}, {[]int{3, 3, 3}, 2, 6}, {[]int{4, 4, 4, 4, 1, 1}, 2, 9}, {[]int{7}, 3, 7}, {nil, 2, 0}, {[]int{2, 1, 1}, 1, 4}} {
		if got := busiestWork(c.tasks, c.workers); got != c.want {
			t.Errorf("busiestWork(%v, %d) = %d, want %d", c.tasks, c.workers, got, c.want)
		}
	}
}

// TestPlanTilesCover checks, over random shapes, kernels' tile sizes and worker counts, that
// every plan's tiles are multiples of the kernel's and cover out: nTiles column tiles of nc
// reach n (the last one not empty), mChunks tasks of tilesPerTask row tiles of mc reach m.
func TestPlanTilesCover(t *testing.T) {
	seed := uint64(20261205)
	rng := rand.New(rand.NewPCG(seed, 1))
	t.Logf("seed %d", seed)
	for range 20000 {
		mr, nr := []int{2, 4}[rng.IntN(2)], []int{2, 8, 16, 64}[rng.IntN(4)]
		batch, m, n, workers := 1+rng.IntN(4), 1+rng.IntN(3000), 1+rng.IntN(3000), 1+rng.IntN(8)
		wholeRows, columnsOK := rng.IntN(4) == 0, rng.IntN(2) == 0
		p := planTiles(mr, nr, batch, m, n, workers, wholeRows, columnsOK)
		what := fmt.Sprintf("planTiles(%d, %d, batch %d, m %d, n %d, workers %d, %v, %v) = %+v", mr, nr, batch, m, n, workers, wholeRows, columnsOK, p)
		switch {
		case p.mc <= 0 || p.mc%mr != 0 || p.nc <= 0 || p.nc%nr != 0:
			t.Fatalf("%s: tiles not multiples of %d×%d", what, mr, nr)
		case p.nTiles*p.nc < n || (p.nTiles-1)*p.nc >= n:
			t.Fatalf("%s: %d column tiles of %d do not cover n %d exactly", what, p.nTiles, p.nc, n)
		case p.mTiles*p.mc < m || (p.mTiles-1)*p.mc >= m:
			t.Fatalf("%s: %d row tiles of %d do not cover m %d exactly", what, p.mTiles, p.mc, m)
		case p.mChunks*p.tilesPerTask < p.mTiles || (p.mChunks-1)*p.tilesPerTask >= p.mTiles:
			t.Fatalf("%s: %d chunks of %d row tiles do not cover %d tiles exactly", what, p.mChunks, p.tilesPerTask, p.mTiles)
		}
	}
}

// TestGEMMColumnTilesAgainstFloat64 runs products that take column tiles (checked with
// planTiles) on each kernel with in-place A rows, against the float64 reference within the
// error bound of TestGEMMAgainstFloat64, for 1, 2 and 3 workers.
func TestGEMMColumnTilesAgainstFloat64(t *testing.T) {
	var kernels []microKernel[float32]
	if k, ok := asmKernelF32AVX512(); ok {
		kernels = append(kernels, k)
	}
	if k, ok := asmKernelF32(); ok {
		kernels = append(kernels, k)
	}
	if len(kernels) == 0 {
		t.Skip("no float32 kernel reads A's rows in place on this CPU")
	}
	rowsK := layouts[0] // [b, rows, k]: A's rows contiguous, read in place
	ran := 0
	for _, kern := range kernels {
		for _, c := range []gemmCase{{1, 448, 384, 384}, {1, 61, 200, 70}, {2, 37, 130, 129}, {1, 9, 576, 33}, {1, 130, 513, 300}} {
			for _, workers := range []int{2, 3} {
				name := fmt.Sprintf("%s/b%d_m%d_n%d_k%d/w%d", kern.name, c.batch, c.m, c.n, c.k, workers)
				t.Run(name, func(t *testing.T) {
					p := planTiles(kern.mr, kern.nr, c.batch, c.m, c.n, workers, false, true)
					if p.mChunks != 1 || p == planTiles(kern.mr, kern.nr, c.batch, c.m, c.n, workers, false, false) {
						t.Skipf("plan %+v: not column tiles for this kernel and worker count", p)
					}
					ran++
					for _, rl := range layouts {
						l, r, out := randProduct[float32](c, rowsK, rl, uint64(c.m*1000+c.n), 7)
						gemm(kern, l, r, out, c.batch, c.m, c.n, c.k, workers)
						checkProduct(t, c, l, r, out, 0x1p-24, kern.name+" rhs "+rl.name)
					}
				})
			}
		}
	}
	if ran < 10 {
		t.Errorf("only %d products took column tiles", ran)
	}
}
