package bench

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
)

// torchNotInstalled is what the report says when no Python with PyTorch is found.
const torchNotInstalled = "PyTorch: not installed (run scripts/setup.sh)"

// benchTorch times the distinct (shape, causal) pairs of cases with parity/bench_torch.py.
// It returns nil info and a note when PyTorch cannot be run.
func benchTorch(cfg Config, python string, cases []mhaCase) (*torchInfo, []mhaResult, string) {
	script := cfg.TorchScript
	if script == "" {
		script = findRepoFile(filepath.Join("parity", "bench_torch.py"))
	}
	if python == "" {
		return nil, nil, torchNotInstalled
	}
	if script == "" {
		return nil, nil, "PyTorch: parity/bench_torch.py not found (run from the repository, or pass --torch-script)"
	}
	type torchCase struct {
		Key       string  `json:"key"`
		Batch     int     `json:"batch"`
		Seq       int     `json:"seq"`
		Embed     int     `json:"embed"`
		Heads     int     `json:"heads"`
		Causal    bool    `json:"causal"`
		Warmup    int     `json:"warmup"`
		Runs      int     `json:"runs"`
		BudgetSec float64 `json:"budget_s"`
	}
	req := struct {
		Threads int         `json:"threads"`
		Device  string      `json:"device"`
		Cases   []torchCase `json:"cases"`
	}{Threads: cfg.Threads, Device: cfg.TorchDevice}
	byKey := map[string]mhaCase{}
	for _, c := range cases {
		if _, dup := byKey[c.key()]; dup {
			continue
		}
		byKey[c.key()] = c
		req.Cases = append(req.Cases, torchCase{Key: c.key(), Batch: c.B, Seq: c.L, Embed: c.E, Heads: c.H,
			Causal: c.Causal, Warmup: c.Warmup, Runs: c.Runs, BudgetSec: cfg.Budget.Seconds()})
	}
	in, err := json.Marshal(req)
	if err != nil {
		return nil, nil, "PyTorch: " + err.Error()
	}
	cmd := exec.Command(python, script)
	cmd.Stdin = bytes.NewReader(in)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		return nil, nil, fmt.Sprintf("PyTorch: %s %s failed: %v: %s", python, script, err, lastLines(errOut.String(), 5))
	}
	var ans struct {
		Error         string `json:"error"`
		Torch         string `json:"torch"`
		BLAS          string `json:"blas"`
		Threads       int    `json:"threads"`
		CPUCapability string `json:"cpu_capability"`
		Device        string `json:"device"`
		Results       []struct {
			Key      string    `json:"key"`
			TimesMS  []float64 `json:"times_ms"`
			MedianMS float64   `json:"median_ms"`
			MinMS    float64   `json:"min_ms"`
		} `json:"results"`
	}
	if err := json.Unmarshal(out.Bytes(), &ans); err != nil {
		return nil, nil, fmt.Sprintf("PyTorch: unreadable answer from %s: %v", script, err)
	}
	switch {
	case strings.HasPrefix(ans.Error, "PyTorch not installed"):
		return nil, nil, torchNotInstalled + " — " + python + ": " + ans.Error
	case ans.Error != "":
		return nil, nil, "PyTorch: " + ans.Error
	}
	info := &torchInfo{Version: ans.Torch, BLAS: ans.BLAS, Threads: ans.Threads, CPUCapability: ans.CPUCapability,
		Device: ans.Device, Python: python}
	var results []mhaResult
	for _, r := range ans.Results {
		c := byKey[r.Key]
		c.Flash = false
		res := mhaResult{mhaCase: c, Backend: "torch " + cfg.TorchDevice, Impl: torchImpl(ans.Torch),
			TimesMS: r.TimesMS, MedianMS: r.MedianMS, MinMS: r.MinMS, GFLOPS: c.flops() / (r.MedianMS * 1e6)}
		results = append(results, res)
	}
	return info, results, ""
}

// findPython returns the Python to run PyTorch with: flagValue, $MHALAB_TORCH_VENV/bin/python,
// the venv scripts/setup.sh makes, or python3 on PATH ("" if none exists).
func findPython(flagValue string) string {
	if flagValue != "" {
		return flagValue
	}
	if p := venvPython("MHALAB_TORCH_VENV", "torch-venv"); p != "" {
		return p
	}
	if p, err := exec.LookPath("python3"); err == nil {
		return p
	}
	return ""
}

// findRepoFile looks for rel in the working directory and its parents, then next to the
// executable and its parent; "" if not found.
func findRepoFile(rel string) string {
	var dirs []string
	if wd, err := os.Getwd(); err == nil {
		for d := wd; ; d = filepath.Dir(d) {
			dirs = append(dirs, d)
			if filepath.Dir(d) == d {
				break
			}
		}
	}
	if exe, err := os.Executable(); err == nil {
		dirs = append(dirs, filepath.Dir(exe), filepath.Dir(filepath.Dir(exe)))
	}
	for _, d := range dirs {
		p := filepath.Join(d, rel)
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	return ""
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, " | ")
}

// torchImpl names PyTorch's rows: "PyTorch 2.15.0+cu132 nn.MHA".
func torchImpl(version string) string { return "PyTorch " + version + " nn.MHA" }

// pairTorch pairs PyTorch's results from before and after one case, per PyTorch (Impl);
// a PyTorch missing from either side is left out.
func pairTorch(before, after map[string]mhaResult) []torchPair {
	var pairs []torchPair
	for impl, b := range before {
		if a, ok := after[impl]; ok && b.Error == "" && a.Error == "" {
			pairs = append(pairs, torchPair{Impl: impl, BeforeMS: b.MedianMS, AfterMS: a.MedianMS})
		}
	}
	slices.SortFunc(pairs, func(x, y torchPair) int { return strings.Compare(x.Impl, y.Impl) })
	return pairs
}

// poolTorch merges PyTorch's measurements of the same shape into one row per PyTorch and
// shape, in the order of their first measurement: all timed runs together, their median and
// minimum.
func poolTorch(runs []mhaResult) []mhaResult {
	var pooled []mhaResult
	index := map[string]int{} // Impl + key → position in pooled
	for _, r := range runs {
		id := r.Impl + "\x00" + r.key()
		i, ok := index[id]
		if !ok {
			index[id] = len(pooled)
			r.TimesMS = slices.Clone(r.TimesMS)
			r.Measurements = 1
			pooled = append(pooled, r)
			continue
		}
		pooled[i].TimesMS = append(pooled[i].TimesMS, r.TimesMS...)
		pooled[i].Measurements++
	}
	for i := range pooled {
		p := &pooled[i]
		if len(p.TimesMS) > 0 {
			p.MedianMS, p.MinMS = Median(p.TimesMS), slices.Min(p.TimesMS)
			p.GFLOPS = p.flops() / (p.MedianMS * 1e6)
		}
	}
	return pooled
}

// compareWithTorch fills VsTorch of every mhalib result: against the mean of PyTorch's medians
// right before and after it where they were measured, else against PyTorch's pooled median
// for its shape.
func compareWithTorch(rep *benchReport) {
	torch := map[string]map[string]float64{} // impl → key → median
	for _, r := range rep.MHA {
		if r.isTorch() {
			if torch[r.Impl] == nil {
				torch[r.Impl] = map[string]float64{}
			}
			torch[r.Impl][r.key()] = r.MedianMS
		}
	}
	for i, r := range rep.MHA {
		if r.isTorch() || r.MedianMS <= 0 {
			continue
		}
		vs := map[string]float64{}
		for impl, times := range torch {
			if t, ok := times[r.key()]; ok && t > 0 {
				vs[impl] = r.MedianMS / t
			}
		}
		for _, p := range r.Torch {
			if p.MeanMS() > 0 {
				vs[p.Impl] = r.MedianMS / p.MeanMS()
			}
		}
		if len(vs) > 0 {
			rep.MHA[i].VsTorch = vs
		}
	}
}

// torchReference returns the PyTorch time r's ratio is measured against, for the fastest
// PyTorch: the mean of its medians before and after r where measured, else its pooled median.
func torchReference(rep *benchReport, r mhaResult) (impl string, ms float64) {
	for _, p := range r.Torch {
		if m := p.MeanMS(); m > 0 && (ms == 0 || m < ms) {
			impl, ms = p.Impl, m
		}
	}
	if ms > 0 {
		return impl, ms
	}
	return fastestTorch(rep, r.key())
}

func (r mhaResult) isTorch() bool { return strings.HasPrefix(r.Impl, "PyTorch") }

// fastestTorch returns PyTorch's fastest median for key and which PyTorch that was.
func fastestTorch(rep *benchReport, key string) (impl string, medianMS float64) {
	for _, r := range rep.MHA {
		if r.isTorch() && r.key() == key && r.Error == "" && (medianMS == 0 || r.MedianMS < medianMS) {
			impl, medianMS = r.Impl, r.MedianMS
		}
	}
	return impl, medianMS
}
