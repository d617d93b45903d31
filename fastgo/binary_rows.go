package fastgo

// The small broadcasts of a decoding step, as rows.
//
// Most broadcasting binary ops of a decoding step are small (a few hundred to a few thousand
// elements) and of two kinds: a row of values applied to every row (RoPE's cos and sin tables
// [1, 1, 1, hd] against [1, 1, heads, hd]) and one value per row (softmax's maxima and sums
// [.., 1] against the scores [.., S]). Through the general plan (broadcast.go: strides tables,
// the merged plan, a walker and a closure per op) such an op took 2–3 µs in an op-by-op
// profile of SmolLM2's step, most of it allocations and bookkeeping, against ~0.1 µs of
// arithmetic; BenchmarkBinaryRows (the whole executor, as simplego runs it) measured 1387 ns a
// node that way and 694 ns this way (2-core AMD EPYC, AVX2). rowsOf recognises the shapes whose axes, size-1 axes
// dropped and alike neighbours merged, come down to at most two, [R, C], and binaryRows runs
// them one output row at a time with the same vector loops (binaryVV, binaryVS, binarySV) on
// the same runs as the general path: the same bits.

// rowKind is how an operand covers one of the two axes [R, C]: all of it, or broadcast.
type rowKind uint8

const (
	rowFull rowKind = iota
	rowBcast
)

// rowsMaxRank is the largest rank rowsOf looks at (its tables live on the stack).
const rowsMaxRank = 8

// rowsOf reports whether an output of dims out, from operands of dims in[0], in[1] (each of the
// output's rank; size 1 where broadcast), is R rows of C columns for both operands — kinds[k] =
// [kind over R, kind over C] — after dropping the output's size-1 axes and merging neighbouring
// axes that both operands cover alike, with at least one operand covering the columns (or one
// column): the layouts binaryRows computes.
func rowsOf(out []int, in [2][]int) (R, C int, kinds [2][2]rowKind, ok bool) {
	if len(out) > rowsMaxRank || len(in[0]) != len(out) || len(in[1]) != len(out) {
		return 0, 0, kinds, false
	}
	var dims [rowsMaxRank]int
	var kind [rowsMaxRank][2]rowKind
	n := 0
	for a, d := range out {
		if d == 1 {
			continue
		}
		var k [2]rowKind
		for i := range 2 {
			switch in[i][a] {
			case d:
				k[i] = rowFull
			case 1:
				k[i] = rowBcast
			default:
				return 0, 0, kinds, false
			}
		}
		if n > 0 && kind[n-1] == k {
			dims[n-1] *= d
			continue
		}
		dims[n], kind[n] = d, k
		n++
	}
	switch n {
	case 0: // one element
		return 1, 1, kinds, true
	case 1:
		R, C, kinds = 1, dims[0], [2][2]rowKind{{rowFull, kind[0][0]}, {rowFull, kind[0][1]}}
	case 2:
		R, C, kinds = dims[0], dims[1], [2][2]rowKind{{kind[0][0], kind[1][0]}, {kind[0][1], kind[1][1]}}
	default:
		return 0, 0, kinds, false
	}
	if kinds[0][1] != rowFull && kinds[1][1] != rowFull && C > 1 { // both constant along the columns
		return 0, 0, kinds, false
	}
	return R, C, kinds, true
}

// rowsMinPerWorker is the fewest rows per worker for which a large output (minParallelWork
// elements or more) goes as rows too, cut over the workers by rows, instead of through the
// general plan. The plan's walker and closure cost per run, and a run is a row: the softmax's
// division of attention's output [32, 8, 128, 64] by its sums [32, 8, 128, 1] (fastgo's
// BenchmarkMHA/seed003) is 32768 runs of 64 values, 1.1 ms a pass that way.
const rowsMinPerWorker = 16

// binaryRows: out [R, C] = a ⊙ b for operands laid out as kinds says (rowsOf), the rows cut
// over workers when there are minParallelWork values or more.
func binaryRows[T Float](o op, a, b, out []T, R, C int, kinds [2][2]rowKind, workers int) {
	if R*C < minParallelWork || workers <= 1 {
		binaryRowRange(o, a, b, out, C, kinds, 0, R)
		return
	}
	parallelFor(R, max(1, minParallelWork/max(C, 1)), workers, func(lo, hi int) {
		binaryRowRange(o, a, b, out, C, kinds, lo, hi)
	})
}

// binaryRowRange is binaryRows for rows lo … hi−1, on the calling goroutine.
func binaryRowRange[T Float](o op, a, b, out []T, C int, kinds [2][2]rowKind, lo, hi int) {
	aCol, bCol := kinds[0][1] == rowFull, kinds[1][1] == rowFull
	// the start of row r of an operand
	at := func(k [2]rowKind, r int) int {
		if k[0] == rowBcast {
			r = 0
		}
		if k[1] == rowFull {
			return r * C
		}
		return r
	}
	for r := lo; r < hi; r++ {
		dst := out[r*C : (r+1)*C]
		ia, ib := at(kinds[0], r), at(kinds[1], r)
		switch {
		case aCol && bCol:
			binaryVV(o, dst, a[ia:ia+C], b[ib:ib+C])
		case aCol:
			binaryVS(o, dst, a[ia:ia+C], b[ib])
		case bCol:
			binarySV(o, dst, a[ia], b[ib:ib+C])
		default: // C = 1
			binaryVV(o, dst, a[ia:ia+1], b[ib:ib+1])
		}
	}
}
