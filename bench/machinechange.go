package bench

import (
	"fmt"
	"io"
	"strings"
)

// printMachineChange warns, before a comparison (--compare, CompareReports), when the two runs
// were made on different machines: another CPU count or model, kernels of another instruction
// set in fastgo (an AVX-512 machine then, an AVX2 laptop now), or PyTorch on another CPU
// capability. Medians then change with the machine, not only with the code; each run's ratios
// to PyTorch stay comparable in as far as both sides moved alike. Fields an older report lacks
// count as unknown, not as different. Nothing is printed when nothing known differs.
func printMachineChange(w io.Writer, old, cur *benchReport) {
	var diffs []string
	o, c := old.Machine, cur.Machine
	if o.CPUs > 0 && c.CPUs > 0 && (o.CPUs != c.CPUs || o.CPUModel != c.CPUModel) {
		diffs = append(diffs, fmt.Sprintf("CPUs then %d (%s), now %d (%s)", o.CPUs, o.CPUModel, c.CPUs, c.CPUModel))
	}
	if o.FastGo != "" && c.FastGo != "" && o.FastGo != c.FastGo {
		diffs = append(diffs, fmt.Sprintf("fastgo then “%s”, now “%s”", o.FastGo, c.FastGo))
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
