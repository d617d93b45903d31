package bench

import (
	"fmt"
	"io"
	"regexp"
	"strings"
)

// printMachineChange warns, before a comparison (--compare, CompareReports), when the two runs
// were made on different machines: another CPU count or model, kernels of another instruction
// set in fastgo (an AVX-512 machine then, an AVX2 laptop now), a float32 FMA peak more than
// 15% apart (peak.go: the same model name on other cores or clocks), or PyTorch on another CPU
// capability. Medians then change with the machine, not only with the code; each run's ratios
// to PyTorch stay comparable in as far as both sides moved alike. Fields an older report lacks
// count as unknown, not as different. Nothing is printed when nothing known differs.
func printMachineChange(w io.Writer, old, cur *benchReport) {
	var diffs []string
	o, c := old.Machine, cur.Machine
	if o.CPUs > 0 && c.CPUs > 0 && (o.CPUs != c.CPUs || o.CPUModel != c.CPUModel) {
		diffs = append(diffs, fmt.Sprintf("CPUs then %d (%s), now %d (%s)", o.CPUs, o.CPUModel, c.CPUs, c.CPUModel))
	}
	if o.FastGo != "" && c.FastGo != "" && fastgoKernels(o.FastGo) != fastgoKernels(c.FastGo) {
		diffs = append(diffs, fmt.Sprintf("fastgo then “%s”, now “%s”", o.FastGo, c.FastGo))
	}
	if op, cp := o.PeakGFLOPS, c.PeakGFLOPS; op > 0 && cp > 0 && max(op, cp) > 1.15*min(op, cp) {
		// 15%: more than a quiet machine's spread of the measurement, less than a change of the
		// vector units (Zen 4 to Zen 5: 2×) or of the clock between VM types
		diffs = append(diffs, fmt.Sprintf("float32 FMA peak then %.0f GFLOP/s, now %.0f", op, cp))
	}
	if oc, cc := torchCapability(old), torchCapability(cur); oc != "" && cc != "" && oc != cc {
		diffs = append(diffs, fmt.Sprintf("PyTorch's CPU capability then %s, now %s", oc, cc))
	}
	if len(diffs) == 0 {
		return
	}
	fmt.Fprintf(w, "\nWarning: the runs were made on different machines (%s): the medians compare the machines as well as the code; compare the ratios to PyTorch.\n",
		strings.Join(diffs, "; "))
}

// torchCapability is the CPU capability PyTorch reported in rep (its first PyTorch), or "".
func torchCapability(rep *benchReport) string {
	for _, t := range rep.Torch {
		if t.CPUCapability != "" {
			return t.CPUCapability
		}
	}
	return ""
}

// opCount is fastgo.Status's count of element-wise ops, "(22)" in "element-wise ops (22) avx512".
var opCount = regexp.MustCompile(`element-wise ops \(\d+\)`)

// fastgoKernels is a fastgo.Status line without its count of element-wise ops: a new op in
// fastgo changes the count, not the machine's kernels.
func fastgoKernels(status string) string {
	return opCount.ReplaceAllString(status, "element-wise ops")
}
