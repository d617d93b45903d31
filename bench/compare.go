package bench

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strings"
)

// Comparison with a previous run: `mhalab bench --compare FILE` reads the JSON report of an
// earlier run (Config.ComparePath) and prints, for every forward-pass case measured in both,
// the old and new medians, the change, and the old and new ratios to PyTorch. Ratios are each
// measured within their own run (PyTorch timed next to the case), so they are the numbers to
// compare across runs made under different machine loads; medians alone move with the load.

// readReport reads the JSON report of a previous run (--compare).
func readReport(path string) (*benchReport, error) {
	rep, err := decodeReport(path)
	var notReport notAReportError
	switch {
	case errors.As(err, &notReport):
		return nil, fmt.Errorf("--compare %w", err)
	case err != nil:
		return nil, fmt.Errorf("--compare: %w", err)
	}
	return rep, nil
}

// notAReportError says a file is not the JSON report of a run; its message starts with the path.
type notAReportError struct{ msg string }

func (e notAReportError) Error() string { return e.msg }

// decodeReport reads a run's JSON report (written by --json).
func decodeReport(path string) (*benchReport, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var rep benchReport
	if err := json.Unmarshal(data, &rep); err != nil {
		return nil, notAReportError{fmt.Sprintf("%s: not a JSON report of mhalab bench: %v", path, err)}
	}
	if rep.Started == "" {
		return nil, notAReportError{fmt.Sprintf("%s: not a JSON report of mhalab bench (no \"started\" field)", path)}
	}
	return &rep, nil
}

// caseID identifies a forward-pass result across runs: backend, implementation and shape.
func (r mhaResult) caseID() string {
	backend := r.Backend
	if r.isTorch() {
		backend = "torch" // PyTorch's rows match across versions; the version is shown
	}
	return strings.Join([]string{r.key(), r.shape(), backend, r.Impl}, "|")
}

// bestRatio returns the smallest ratio to any PyTorch of r (0 if none).
func (r mhaResult) bestRatio() float64 {
	best := 0.0
	for _, v := range r.VsTorch {
		if best == 0 || v < best {
			best = v
		}
	}
	return best
}

// printComparisons prints, under one heading naming the old run, old → cur for each suite cur
// has rows of: forward passes, KV-cache decoding, sliding windows, SmolLM2, MiniLM, memory.
func printComparisons(w io.Writer, old, cur *benchReport, oldPath string) {
	fmt.Fprintf(w, "\n## Compared with %s (%s; load average before %s, after %s)\n", oldPath, old.Started,
		old.Machine.LoadBefore, old.Machine.LoadAfter)
	printComparison(w, old, cur)
	printDecodeComparison(w, old, cur)
	printWindowComparison(w, old, cur)
	printSmolLM2Comparison(w, old, cur)
	printMiniLMComparison(w, old, cur)
	printMemComparison(w, old, cur)
}

// printComparison prints old → cur for every forward-pass case of cur, then the cases only the
// old run has; nothing when cur has no forward-pass rows.
func printComparison(w io.Writer, old, cur *benchReport) {
	if len(cur.MHA) == 0 {
		return
	}
	fmt.Fprintln(w, "\n| case | shape | causal | implementation | backend | median then | median now | change | CPU time then | CPU time now | change | × PyTorch then | × PyTorch now | change |")
	fmt.Fprintln(w, "|---|---|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
	oldByID := map[string]mhaResult{}
	for _, r := range old.MHA {
		if r.Error == "" {
			oldByID[r.caseID()] = r
		}
	}
	seen := map[string]bool{}
	rows := slices.Clone(cur.MHA)
	slices.SortStableFunc(rows, func(a, b mhaResult) int { return strings.Compare(a.key(), b.key()) })
	for _, r := range rows {
		if r.Error != "" {
			continue
		}
		id := r.caseID()
		seen[id] = true
		o, ok := oldByID[id]
		then, change, ratioThen, ratioNow, ratioChange := "—", "new", "—", "—", "—"
		cpuThen, cpuNow, cpuChange := "—", "—", "—"
		if ok {
			then, change = FormatMS(o.MedianMS), relChange(o.MedianMS, r.MedianMS)
		}
		if r.CPUMS > 0 {
			cpuNow = FormatMS(r.CPUMS)
		}
		if ok && o.CPUMS > 0 {
			cpuThen = FormatMS(o.CPUMS)
			if r.CPUMS > 0 {
				cpuChange = relChange(o.CPUMS, r.CPUMS)
			}
		}
		ratioNow = formatRatio(r.bestRatio())
		if v := o.bestRatio(); ok && v > 0 {
			ratioThen = formatRatio(v)
			if r.bestRatio() > 0 {
				ratioChange = relChange(v, r.bestRatio())
			}
		}
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", r.Group, r.shape(), yesNo(r.Causal),
			r.Impl, r.Backend, then, FormatMS(r.MedianMS), change, cpuThen, cpuNow, cpuChange, ratioThen, ratioNow, ratioChange)
	}
	for _, o := range old.MHA {
		if id := o.caseID(); o.Error == "" && !seen[id] {
			fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s | not run now | | | | | | | |\n", o.Group, o.shape(), yesNo(o.Causal),
				o.Impl, o.Backend, FormatMS(o.MedianMS))
		}
	}
	fmt.Fprintln(w, "\nchange: (now − then) / then; negative is faster. × PyTorch is each run's own ratio (the fastest PyTorch), the number to compare when the machine's load differed.")
}

// relChange formats (now − then)/then as a signed percentage: "−12.3 %", "+4.0 %".
func relChange(then, now float64) string {
	if then <= 0 {
		return "—"
	}
	c := 100 * (now - then) / then
	sign := "+"
	if c < 0 {
		sign = "−"
	}
	return fmt.Sprintf("%s%.1f %%", sign, math.Abs(c))
}

// CompareReports prints what --compare prints for two saved JSON reports (--json): every suite's
// rows of cur against old (printComparisons), for a run whose earlier report was not ready when
// it started.
func CompareReports(w io.Writer, oldPath, curPath string) error {
	old, err := decodeReport(oldPath)
	if err != nil {
		return err
	}
	cur, err := decodeReport(curPath)
	if err != nil {
		return err
	}
	printMachineChange(w, old, cur)
	printComparisons(w, old, cur, oldPath)
	return nil
}
