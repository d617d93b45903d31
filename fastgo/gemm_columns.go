package fastgo

import "slices"

// Column tiles instead of row chunks.
//
// planTiles cuts a product with few column tiles into row chunks too, so that every worker gets
// about two tasks; each of them then packs the same B panel again. all-MiniLM-L6-v2's
// projections, x [448, 384] · W [384, 384]ᵀ, ran as 4 tasks of 128 rows, each packing all of W:
// B was packed 4 times. Where A's rows are read in place (the groups kernel), a task can take
// all rows and fewer columns instead: B is packed once, and A — read, not packed — is read once
// per column tile. That trade wins while A is small against the repeated packing: t·m (A's rows
// read by t column tiles) below 2·r·n (B's n rows packed by r row chunks, each written and read
// back). On large inputs (llm's x [8192, 768]) reading A again costs more than packing B twice.
// And the column tiles must share the work among the workers as well as the row chunks did: of
// x [64, 576] · W [576, 576]ᵀ (a SmolLM2 prompt) 9 column panels do not split evenly in 2, and
// tiles of 5 and 4 panels took 1.15× the time of the 6 row-chunk tasks.
//
// columnsFirst is the switch (off: benchmarks' A/B, MHALAB_FASTGO_AB=colsfirst=0,1).
var columnsFirst = true

// columnPlan returns the columns per tile (a multiple of nr, at most ncBlock) of a plan with one
// task per column tile and batch example, all m rows, that replaces the row plan — tiles of nc
// columns, each in rowChunks tasks of tilesPerTask row tiles of mc rows — or 0 to keep the row
// plan. Of the tile widths whose busiest worker has the least work (ties: the widest, reading A
// the fewest times), it takes the one whose busiest worker has no more work than in the row plan,
// if A's reads cost less than B's repeated packing (above).
func columnPlan(batch, m, n, nr, mc, nc, tilesPerTask, rowChunks, workers int) int {
	if !columnsFirst || rowChunks <= 1 {
		return 0
	}
	var rowTasks []int // rows × columns of each task, in gemmThen's order: example, column tile, row chunk
	for range batch {
		for j0 := 0; j0 < n; j0 += nc {
			for i0 := 0; i0 < m; i0 += tilesPerTask * mc {
				rowTasks = append(rowTasks, min(tilesPerTask*mc, m-i0)*min(nc, n-j0))
			}
		}
	}
	busiest := func(width int) int {
		var tasks []int
		for range batch {
			for j0 := 0; j0 < n; j0 += width {
				tasks = append(tasks, m*min(width, n-j0))
			}
		}
		return busiestWork(tasks, workers)
	}
	best, bestWork := 0, 0
	for p := min(ceilDiv(n, nr), ncBlock/nr); p >= 1; p-- {
		width := p * nr
		if work := busiest(width); best == 0 || work < bestWork {
			best, bestWork = width, work
		}
	}
	if best == 0 || bestWork > busiestWork(rowTasks, workers) || ceilDiv(n, best)*m >= 2*rowChunks*n {
		return 0
	}
	return best
}

// busiestWork returns the work of the busiest of workers that take tasks (their work) in order,
// each task going to the worker free first — as parallelFor hands them out when each is a range
// of its own (up to 4 a worker).
func busiestWork(tasks []int, workers int) int {
	load := make([]int, max(1, workers))
	for _, w := range tasks {
		free := 0
		for i := range load {
			if load[i] < load[free] {
				free = i
			}
		}
		load[free] += w
	}
	return slices.Max(load)
}
