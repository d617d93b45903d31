package fastgo

import "sync/atomic"

// The weighted sum of a grouped decoding step: in grouped-query attention, g = Hq/Hkv query
// heads share one key/value head, so one new token's attention weights are g rows against the
// same cache of 64-feature value rows:
//
//	w [batch, g, n] · V [batch, n, 64] → [batch, g, 64]   (V rows a stride apart)
//
// gemv (gemv.go) takes it up to gemvMaxRows rows, one or four rows per pass over V; with more
// (g = 32 with one key/value head) it declines and the GEMM packs (copies) V first — in a
// profile of the modern suite's decoding step with one key/value head, a ninth of the step.
// groupRows reads V where it lies, in blocks of groupBlockRows rows, each block against every
// pair of weight rows of the task while it is in L1 (weightRows64); a pair's 8 output vectors
// stay in registers within a block and in the output between blocks. Sums run in another order
// than gemv's and the GEMM's, within the same bound (2(k+1)·u·Σ|a·b|).
//
// The scores q·Kᵀ of the same step were tried the same way (four key rows in registers against
// every query row): Go's register allocator keeps 16 vector registers, so the 16 key vectors
// spilled and it ran at half the speed of gemv's dotRows, which streams a 64-key tile from L1
// once per query row.

// groupMaxRows is the most weight rows per batch example groupRows takes (a step of one token
// with Hq/Hkv query heads per key/value head: 32 for multi-query attention at Hq 32; more rows
// are a prompt, whose products the GEMM does well).
const groupMaxRows = 64

// groupCalls counts the products groupRows computed; useGroupRows switches it on (off: gemv
// and the GEMM take these products, as before it existed — for tests and benchmarks).
var (
	groupCalls   atomic.Int64
	useGroupRows = true
)

// groupBlockRows is the V rows weightRows64 reads per block (16 KB, in L1 for every pair of
// weight rows), groupPairs the pairs of weight rows per task.
const (
	groupBlockRows = 64
	groupPairs     = 4
)

// groupRows computes out[b, i, j] = Σ_k lhs(b, i, k)·rhs(b, j, k) for the weighted sum above
// (float32, 2 ≤ m ≤ groupMaxRows weight rows contiguous along k, n = 64, rhs contiguous along
// its 64 columns with rows a constant stride apart; with AVX-512) and reports whether it did
// (false: nothing written, gemv or gemm takes the product).
//
//	out: [batch, m, n], row-major, fully overwritten.
func groupRows[T Float](lhs, rhs operand[T], out []T, batch, m, n, k, workers int) bool {
	l, ok := any(lhs).(operand[float32])
	if !ok || !useGroupRows || !hasGroupRows() || m < 2 || m > groupMaxRows || n < 1 || k < 1 {
		return false
	}
	r := any(rhs).(operand[float32])
	o := any(out).([]float32)
	// Weight rows: contiguous along k, a constant stride apart.
	if !l.contiguous || l.crossStride < k {
		return false
	}
	ldl := l.crossStride
	if n != 64 || !r.crossContiguous {
		return false
	}
	ldr := 64 // V rows a stride apart (one row: any)
	if k > 1 {
		if ldr = uniformStride(r.contractOff); ldr < 64 {
			return false
		}
	}
	groupCalls.Add(1)
	// Tasks of groupPairs pairs of weight rows: each reads its example's V from memory once,
	// then from L1 for every pair.
	groups := ceilDiv(m, 2*groupPairs)
	parallelFor(batch*groups, 1, workers, func(lo, hi int) {
		for task := lo; task < hi; task++ {
			b, i := task/groups, (task%groups)*2*groupPairs
			rows := min(2*groupPairs, m-i)
			w := l.flat[l.batchOff[b]+l.crossOff[i]+l.contractOff[0]:]
			vals := r.flat[r.batchOff[b]+r.crossOff[0]+r.contractOff[0]:]
			weightRows64(w, ldl, rows, vals, ldr, k, o[(b*m+i)*64:], 64)
		}
	})
	return true
}
