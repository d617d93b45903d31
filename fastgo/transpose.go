package fastgo

import (
	_ "unsafe" // for go:linkname

	"github.com/gomlx/gomlx/backends/simplego"
)

// Transpose: simplego's kernel walks the operand element by element with a mixed-radix counter
// (a few nanoseconds per element, one goroutine). This one first simplifies the permutation —
// axes of size 1 are dropped and axes that stay next to each other in the same order are merged
// — and then either copies runs (the last axis does not move: moving heads [B, L, h, dk] →
// [B, h, L, dk] copies rows of dk values) or transposes the two innermost axes in tiles
// that stay in the L1 cache. Both cut the work into ranges for several goroutines. float32,
// float64, int32, int64 and bool are handled (a transpose only moves values: the result is exact).

//go:linkname gomlxTranspose github.com/gomlx/gomlx/backends/simplego.execTranspose
func gomlxTranspose(backend *simplego.Backend, node *simplego.Node, inputs []*simplego.Buffer, inputsOwned []bool) (*simplego.Buffer, error)

// The two-axis transpose works in tiles of transposeTileY operand rows × transposeTileX operand
// columns, gathered transposed into a small buffer and written out as transposeTileX runs of
// transposeTileY values. Writing each element straight to its place instead (32×32 tiles) ran
// about 3× slower on [4096, 1536]: the output rows of a tile are a power of two apart in
// memory and compete for the same L1 cache sets. float32 on AVX-512 or AVX2 transposes 16×16
// blocks in registers first (transposeBlocksF32; on AVX2 four 8×8 a block), about 2× faster
// again; the tiles take the rest.
const transposeTileX, transposeTileY = 16, 64

func execTranspose(backend *simplego.Backend, node *simplego.Node, inputs []*simplego.Buffer, inputsOwned []bool) (*simplego.Buffer, error) {
	perm, ok := nodeInts(node)
	if !ok || !enabled.Load() {
		return fallback(opTranspose, gomlxTranspose, backend, node, inputs, inputsOwned)
	}
	inShape, err := backend.BufferShape(inputs[0])
	if err != nil {
		return nil, err
	}
	inFlat, err := backend.BufferData(inputs[0])
	if err != nil {
		return nil, err
	}
	if !movable(inFlat) {
		return fallback(opTranspose, gomlxTranspose, backend, node, inputs, inputsOwned)
	}
	out, outFlat, err := newOutput(backend, nodeShape(node))
	if err != nil {
		return nil, err
	}
	workers := backendParallelism(backend)
	dims, p := simplifyPermutation(inShape.Dimensions, perm)
	switch in := inFlat.(type) {
	case []float32:
		transpose(in, outFlat.([]float32), dims, p, workers)
	case []float64:
		transpose(in, outFlat.([]float64), dims, p, workers)
	case []int32:
		transpose(in, outFlat.([]int32), dims, p, workers)
	case []int64:
		transpose(in, outFlat.([]int64), dims, p, workers)
	case []bool:
		transpose(in, outFlat.([]bool), dims, p, workers)
	}
	count(opTranspose)
	return out, nil
}

// movable reports whether flat is of a type the ops that only move values (Transpose,
// BroadcastInDim) handle.
func movable(flat any) bool {
	switch flat.(type) {
	case []float32, []float64, []int32, []int64, []bool:
		return true
	}
	return false
}

// simplifyPermutation drops the axes of size 1 and merges axes that are adjacent, in order, both
// in the operand and in the output: the same transpose, of lowest rank.
//
//	dims: the operand's dimensions; perm: output axis i is operand axis perm[i]
//	returns the merged operand dimensions and the merged permutation
func simplifyPermutation(dims, perm []int) (mdims, mperm []int) {
	// Output order of the operand axes that are not of size 1.
	var order []int
	for _, a := range perm {
		if dims[a] != 1 {
			order = append(order, a)
		}
	}
	// Groups of consecutive output axes that are consecutive operand axes.
	type group struct{ first, size int }
	var groups []group // in output order
	for i, a := range order {
		if i > 0 && a == order[i-1]+1 {
			groups[len(groups)-1].size *= dims[a]
			continue
		}
		groups = append(groups, group{a, dims[a]})
	}
	// Number the groups in operand order.
	rank := len(groups)
	byOperand := make([]int, rank) // operand position → group index (output position)
	for i := range byOperand {
		byOperand[i] = i
	}
	for i := 1; i < rank; i++ {
		for j := i; j > 0 && groups[byOperand[j-1]].first > groups[byOperand[j]].first; j-- {
			byOperand[j-1], byOperand[j] = byOperand[j], byOperand[j-1]
		}
	}
	mdims = make([]int, rank)
	mperm = make([]int, rank)
	for pos, g := range byOperand {
		mdims[pos] = groups[g].size
		mperm[g] = pos
	}
	return mdims, mperm
}

// transpose writes out = in transposed: dims are the operand's, output axis i is operand axis
// perm[i] (both as simplifyPermutation returns them).
func transpose[T any](in, out []T, dims, perm []int, workers int) {
	rank := len(dims)
	n := len(in)
	if rank <= 1 {
		parallelFor(n, minParallelWork, workers, func(lo, hi int) { copy(out[lo:hi], in[lo:hi]) })
		return
	}
	inStrides := rowMajorStrides(dims)
	outDims := make([]int, rank)
	srcStrides := make([]int, rank) // operand stride of each output axis
	for i, a := range perm {
		outDims[i] = dims[a]
		srcStrides[i] = inStrides[a]
	}
	if perm[rank-1] == rank-1 {
		// The last axis stays: copy runs of `run` values.
		run := dims[rank-1]
		rows := n / run
		grain := max(1, minParallelWork/run)
		parallelFor(rows, grain, workers, func(lo, hi int) {
			w := newWalker(outDims[:rank-1], [3][]int{srcStrides[:rank-1]}, lo)
			for r := lo; r < hi; r++ {
				src := w.off[0]
				copy(out[r*run:(r+1)*run], in[src:src+run])
				w.next()
			}
		})
		return
	}
	// Two-axis tiles: x is the operand's last axis (stride 1 in the operand), y is the operand
	// axis that becomes the output's last axis (stride 1 in the output). Every other axis is an
	// outer loop.
	outStrides := rowMajorStrides(outDims)
	xOut := 0 // output axis of operand axis rank-1
	for i, a := range perm {
		if a == rank-1 {
			xOut = i
		}
	}
	yAxis := perm[rank-1]
	nx, ny := dims[rank-1], dims[yAxis]
	xStrideOut, yStrideIn := outStrides[xOut], inStrides[yAxis]
	var outerDims, outerIn, outerOut []int
	for i, a := range perm {
		if i == rank-1 || a == rank-1 {
			continue
		}
		outerDims = append(outerDims, dims[a])
		outerIn = append(outerIn, inStrides[a])
		outerOut = append(outerOut, outStrides[i])
	}
	tx, ty := transposeTileX, transposeTileY
	yTiles := ceilDiv(ny, ty)
	items := (n / (nx * ny)) * yTiles // (outer index, y tile)
	grain := max(1, minParallelWork/(ty*nx))
	parallelFor(items, grain, workers, func(lo, hi int) {
		w := newWalker(outerDims, [3][]int{outerIn, outerOut}, lo/yTiles)
		buf := make([]T, tx*ty)
		for item := lo; item < hi; item++ {
			if item > lo && item%yTiles == 0 {
				w.next()
			}
			y0 := (item % yTiles) * ty
			y1 := min(y0+ty, ny)
			baseIn, baseOut := w.off[0], w.off[1]
			x0 := 0
			if f32in, ok := any(in).([]float32); ok {
				// 16×16 blocks in vector registers where the CPU has AVX-512 or AVX2: x0 is where
				// they stop.
				x0 = transposeBlocksF32(f32in[baseIn:], yStrideIn, any(out).([]float32)[baseOut:], xStrideOut, y0, y1, nx)
			}
			for ; x0 < nx; x0 += tx {
				x1 := min(x0+tx, nx)
				// Gather the tile transposed in buf (in L1), then write each of its rows out as
				// one contiguous run.
				for y := y0; y < y1; y++ {
					src := in[baseIn+y*yStrideIn+x0 : baseIn+y*yStrideIn+x1]
					for xi, v := range src {
						buf[xi*ty+y-y0] = v
					}
				}
				for x := x0; x < x1; x++ {
					copy(out[baseOut+x*xStrideOut+y0:][:y1-y0], buf[(x-x0)*ty:][:y1-y0])
				}
			}
		}
	})
}
