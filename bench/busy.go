package bench

import (
	"fmt"
	"strconv"
	"strings"
)

// busyFactor is the 1-minute load average per CPU above which a run counts as made on a busy
// machine. The bench itself keeps every CPU busy (load ≈ CPUs, PyTorch's child included); twice
// that means other processes competed for the CPUs.
const busyFactor = 2.0

// busyWarning says, when the machine was busy during the run (the 1-minute load average before,
// after, or at the end of any forward-pass case above busyFactor per CPU), how loaded it was and
// why the ratios to PyTorch and llama.cpp cannot be trusted; "" on a quiet machine. Under load
// the anchors' OpenMP threads, which spin while they wait, lose far more time than Go's and
// XLA's (a run at load 13–24 on 2 CPUs put PyTorch's decoding at a seventh of its quiet speed),
// so the ratios flatter mhalab.
func busyWarning(rep *benchReport) string {
	loads := []string{rep.Machine.LoadBefore, rep.Machine.LoadAfter}
	for _, r := range rep.MHA {
		loads = append(loads, r.Load)
	}
	peak := 0.0
	for _, l := range loads {
		if f := strings.Fields(l); len(f) > 0 {
			if v, err := strconv.ParseFloat(f[0], 64); err == nil {
				peak = max(peak, v)
			}
		}
	}
	cpus := max(rep.Machine.CPUs, 1)
	if peak <= busyFactor*float64(cpus) {
		return ""
	}
	return fmt.Sprintf("the machine was busy (1-minute load average up to %.1f on %d CPUs): PyTorch's and llama.cpp's threads "+
		"lose far more time to other processes than Go's and XLA's, so the × PyTorch and × llama.cpp ratios and the goals below "+
		"flatter mhalab; compare medians of the same binary with --compare, and rerun on a quiet machine for the ratios", peak, cpus)
}
