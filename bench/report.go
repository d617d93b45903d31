package bench

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/dustin/go-humanize"

	"github.com/mhalab/mhalab/internal/atomicfile"
)

// benchReport is everything one run measured; it is also the JSON file's content.
type benchReport struct {
	Started    string          `json:"started"`
	Command    string          `json:"command,omitempty"` // the mhalab bench command line (Config.commandLine)
	Quick      bool            `json:"quick"`
	Machine    machineInfo     `json:"machine"`
	Backends   []backendEntry  `json:"backends"`
	Torch      []torchInfo     `json:"torch,omitempty"`
	TorchNotes []string        `json:"torch_notes,omitempty"`
	MHA        []mhaResult     `json:"mha,omitempty"`
	Products   []productResult `json:"products,omitempty"` // the products suite (products.go)
	Decode     []decodeResult  `json:"decode,omitempty"`
	MiniLM     []minilmResult  `json:"minilm,omitempty"`
	SmolLM2    smollm2Report   `json:"smollm2,omitzero"`
	Explore    []exploreResult `json:"explore,omitempty"`
	Modern     *modernReport   `json:"modern,omitempty"`
	Devices    []devicesResult `json:"devices,omitempty"`
	Memory     []memResult     `json:"memory,omitempty"`
	Checkpoint []memResult     `json:"checkpoint,omitempty"`
	BlockGrad  []memResult     `json:"block_grad,omitempty"` // one pre-LN block's gradient step, plain vs flash (blockgrad.go)
	Goals      []goalResult    `json:"goals,omitempty"`
}

type machineInfo struct {
	CPUs       int    `json:"cpus"`
	CPUModel   string `json:"cpu_model"`
	XLAFlags   string `json:"xla_flags,omitempty"`
	Tunables   string `json:"glibc_tunables,omitempty"` // $GLIBC_TUNABLES of the run (xla.ExecWithHugePages adds glibc.malloc.hugetlb=1); PyTorch's processes inherit it
	GOMAXPROCS int    `json:"gomaxprocs"`
	GoVersion  string `json:"go_version"`
	LoadBefore string `json:"load_before"`
	LoadAfter  string `json:"load_after"`
	MemTotal   string `json:"mem_total"`
	Threads    int    `json:"torch_threads"`
	FastGo     string `json:"fastgo"` // fastgo.Status(): the pure-Go backend's matmul
	// The cores' float32 FMA peak (peak.go), in billions of FLOP/s over all PeakThreads: the
	// largest of PeakRuns (measured at the start and the end of the run), and the kernel timed;
	// 0 with PeakNote when it was not measured or was set aside. Reports before it lack them.
	PeakGFLOPS  float64   `json:"peak_gflops,omitempty"`
	PeakRuns    []float64 `json:"peak_runs,omitempty"`
	PeakKernel  string    `json:"peak_kernel,omitempty"`
	PeakThreads int       `json:"peak_threads,omitempty"`
	PeakNote    string    `json:"peak_note,omitempty"`
	Busy        string    `json:"busy,omitempty"` // busyWarning: the run was made on a busy machine
}

type backendEntry struct {
	Spec   string `json:"spec"`
	Reason string `json:"reason"`
	Error  string `json:"error,omitempty"`
}

type torchInfo struct {
	Version       string `json:"torch"`
	BLAS          string `json:"blas"`
	Threads       int    `json:"threads"`
	CPUCapability string `json:"cpu_capability"`
	Device        string `json:"device"`
	Python        string `json:"python"`
}

// mhaCase is one forward-pass configuration.
type mhaCase struct {
	Group      string `json:"group"` // seed003, long, llm: shapes PyTorch is compared on
	B, L, E, H int
	Causal     bool `json:"causal"`
	Flash      bool `json:"flash"`
	Warmup     int  `json:"warmup"`
	Runs       int  `json:"runs"`
}

// key identifies the (shape, causal) pair PyTorch is timed on.
func (c mhaCase) key() string {
	if c.Causal {
		return c.Group + "/causal"
	}
	return c.Group
}

func (c mhaCase) shape() string { return fmt.Sprintf("B%d L%d E%d h%d", c.B, c.L, c.E, c.H) }

// flops counts the useful floating-point operations of one forward pass: the four projections
// (8·B·L·E²) and the two attention products (4·B·L²·E, half of it with a causal mask).
func (c mhaCase) flops() float64 {
	proj := 8 * float64(c.B) * float64(c.L) * float64(c.E) * float64(c.E)
	attn := 4 * float64(c.B) * float64(c.L) * float64(c.L) * float64(c.E)
	if c.Causal {
		attn /= 2
	}
	return proj + attn
}

func (c mhaCase) impl() string {
	if c.Flash {
		return "mhalib flash"
	}
	return "mhalib plain"
}

type mhaResult struct {
	mhaCase
	Backend   string    `json:"backend"`
	Impl      string    `json:"impl"`
	CompileMS float64   `json:"compile_ms"`
	TimesMS   []float64 `json:"times_ms"`
	MedianMS  float64   `json:"median_ms"`
	MinMS     float64   `json:"min_ms"`
	// CPUMS is the median CPU time of the process during one timed run (every thread): the
	// work done, which another process's load changes less than the elapsed time.
	CPUMS  float64 `json:"cpu_ms,omitempty"`
	GFLOPS float64 `json:"gflops"`
	// VsTorch is median / PyTorch's time for the same shape, per PyTorch (Impl of its rows):
	// the mean of the medians PyTorch took right before and right after this case (Torch), or,
	// for results without them, PyTorch's pooled median for the shape.
	VsTorch map[string]float64 `json:"vs_torch,omitempty"`
	// Torch holds PyTorch's medians on this shape right before and after this case, per PyTorch.
	Torch []torchPair `json:"torch,omitempty"`
	// Load is the load average (1, 5, 15 minutes) when this case finished.
	Load string `json:"load,omitempty"`
	// AutoChoice is whether this row's formulation is the one mhalib's default (Auto) chooses
	// for the shape.
	AutoChoice bool `json:"auto_choice,omitempty"`
	// Measurements is the number of PyTorch runs pooled in a PyTorch row (0 for mhalib rows).
	Measurements int    `json:"measurements,omitempty"`
	Error        string `json:"error,omitempty"`
}

// torchPair is one PyTorch's median on a case's shape, timed right before and right after the
// case: their mean is what the case's ratio divides by, their difference shows how much the
// machine's load moved meanwhile.
type torchPair struct {
	Impl     string  `json:"impl"`
	BeforeMS float64 `json:"before_ms"`
	AfterMS  float64 `json:"after_ms"`
}

// MeanMS is the mean of the two medians.
func (p torchPair) MeanMS() float64 { return (p.BeforeMS + p.AfterMS) / 2 }

type decodeResult struct {
	Backend           string  `json:"backend"`
	Model             string  `json:"model"`
	Context           int     `json:"context"` // positions attended to by the timed steps
	CachedCompileMS   float64 `json:"cached_compile_ms"`
	CachedStepMS      float64 `json:"cached_step_ms"` // median per token
	CachedTokensPerS  float64 `json:"cached_tokens_per_s"`
	RecomputeMS       float64 `json:"recompute_ms"` // median per token (one forward over MaxLen positions)
	RecomputeTokPerS  float64 `json:"recompute_tokens_per_s"`
	Speedup           float64 `json:"speedup"`
	MaxLogitDiff      float64 `json:"max_logit_diff"` // cached vs recompute, last timed step
	Error             string  `json:"error,omitempty"`
	RecomputeCompileM float64 `json:"recompute_compile_ms"`
}

type goalResult struct {
	Goal     string `json:"goal"`
	Measured string `json:"measured"`
	Met      bool   `json:"met"`
}

func printReport(w io.Writer, rep *benchReport) {
	fmt.Fprintf(w, "# mhalab bench%s — %s\n\n", map[bool]string{true: " --quick", false: ""}[rep.Quick], rep.Started)
	if rep.Command != "" {
		fmt.Fprintf(w, "Command: `%s`\n", rep.Command)
	}
	fmt.Fprintf(w, "Machine: %d CPUs (%s; GOMAXPROCS %d), %s, memory %s, load average (1, 5, 15 min) before %s, after %s.\n",
		rep.Machine.CPUs, rep.Machine.CPUModel, rep.Machine.GOMAXPROCS, rep.Machine.GoVersion, rep.Machine.MemTotal, rep.Machine.LoadBefore, rep.Machine.LoadAfter)
	if rep.Machine.Busy != "" {
		fmt.Fprintf(w, "Warning: %s.\n", rep.Machine.Busy)
	}
	if rep.Machine.XLAFlags != "" {
		fmt.Fprintf(w, "XLA_FLAGS=%s\n", rep.Machine.XLAFlags)
	}
	if rep.Machine.Tunables != "" {
		fmt.Fprintf(w, "GLIBC_TUNABLES=%s (for every process of the run, PyTorch's too)\n", rep.Machine.Tunables)
	}
	fmt.Fprintf(w, "Pure-Go matmul: %s.\n", rep.Machine.FastGo)
	if line := peakLine(rep.Machine); line != "" {
		fmt.Fprintln(w, line)
	}
	for _, b := range rep.Backends {
		if b.Error != "" {
			fmt.Fprintf(w, "Backend %s: unavailable: %s\n", b.Spec, b.Error)
		} else {
			fmt.Fprintf(w, "Backend %s\n", b.Reason)
		}
	}
	var torchImpls []string
	for _, t := range rep.Torch {
		fmt.Fprintf(w, "PyTorch %s (%s, BLAS %s, CPU capability %s), %d threads, device %s.\n",
			t.Version, t.Python, t.BLAS, t.CPUCapability, t.Threads, t.Device)
		torchImpls = append(torchImpls, torchImpl(t.Version))
	}
	for _, note := range rep.TorchNotes {
		fmt.Fprintln(w, note)
	}

	if len(rep.MHA) > 0 {
		fmt.Fprintf(w, "\n## Forward pass, self-attention MultiHeadAttention(x, x, x), float32\n\n")
		header, rule := "| case | shape | causal | implementation | backend | compile | median | min | CPU time | runs | GFLOP/s |", "|---|---|---|---|---|---:|---:|---:|---:|---:|---:|"
		for _, impl := range torchImpls {
			name := strings.TrimSuffix(impl, " nn.MHA")
			header += " " + name + " before / after | × " + name + " |"
			rule += "---:|---:|"
		}
		header += " load after |"
		rule += "---|"
		fmt.Fprintln(w, header)
		fmt.Fprintln(w, rule)
		rows := slices.Clone(rep.MHA)
		slices.SortStableFunc(rows, func(a, b mhaResult) int { return strings.Compare(a.key(), b.key()) })
		for _, r := range rows {
			compile, runs := "—", fmt.Sprint(len(r.TimesMS))
			if !r.isTorch() {
				compile = FormatMS(r.CompileMS)
			} else if r.Measurements > 1 {
				runs = fmt.Sprintf("%d (%d×)", len(r.TimesMS), r.Measurements)
			}
			if r.Error != "" {
				fmt.Fprintf(w, "| %s | %s | %s | %s | %s | error: %s ||||||\n", r.Group, r.shape(), yesNo(r.Causal), r.Impl, r.Backend, r.Error)
				continue
			}
			impl := r.Impl
			if r.AutoChoice {
				impl += " (Auto)"
			}
			cpu := "—"
			if r.CPUMS > 0 {
				cpu = FormatMS(r.CPUMS)
			}
			fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %.1f |", r.Group, r.shape(), yesNo(r.Causal),
				impl, r.Backend, compile, FormatMS(r.MedianMS), FormatMS(r.MinMS), cpu, runs, r.GFLOPS)
			for _, impl := range torchImpls {
				pair := "—"
				if i := slices.IndexFunc(r.Torch, func(p torchPair) bool { return p.Impl == impl }); i >= 0 {
					pair = FormatMS(r.Torch[i].BeforeMS) + " / " + FormatMS(r.Torch[i].AfterMS)
				}
				if v, ok := r.VsTorch[impl]; ok {
					fmt.Fprintf(w, " %s | %.2f× |", pair, v)
				} else {
					fmt.Fprintf(w, " %s | — |", pair)
				}
			}
			load := r.Load
			if load == "" {
				load = "—"
			}
			fmt.Fprintf(w, " %s |\n", load)
		}
		fmt.Fprintln(w, "\nCPU time: the median CPU time of this process (all its threads) during one run of the case — the work done, which other processes' load changes less than the elapsed time.")
		fmt.Fprintln(w, "(Auto): the formulation mhalib's default, Formulation(Auto), chooses for the shape on that backend.")
		fmt.Fprintln(w, "PyTorch is timed right before and right after each mhalib case; × PyTorch is the case's median over the mean of those two medians (below 1: faster). PyTorch's own rows pool all its runs on the shape (runs: total, and how many times it was timed).")
		fmt.Fprintln(w, "\nGFLOP/s counts the projections (8·B·L·E²) and the attention products (4·B·L²·E, half when causal).")
	}
	printProducts(w, rep)
	if len(rep.Decode) > 0 {
		fmt.Fprintf(w, "\n## Greedy decoding: KV cache vs recompute (one sequence, tokens at the end of the context)\n\n")
		fmt.Fprintln(w, "| backend | model | cached: ms/token | tokens/s | recompute: ms/token | tokens/s | speed-up | max |Δlogit| |")
		fmt.Fprintln(w, "|---|---|---:|---:|---:|---:|---:|---:|")
		for _, r := range rep.Decode {
			if r.Error != "" {
				fmt.Fprintf(w, "| %s | %s | error: %s ||||||\n", r.Backend, r.Model, r.Error)
				continue
			}
			fmt.Fprintf(w, "| %s | %s | %s | %.1f | %s | %.2f | %s | %.1e |\n", r.Backend, r.Model, FormatMS(r.CachedStepMS),
				r.CachedTokensPerS, FormatMS(r.RecomputeMS), r.RecomputeTokPerS, FormatTimes(r.Speedup), r.MaxLogitDiff)
		}
	}
	if len(rep.MiniLM) > 0 {
		printMiniLM(w, rep.MiniLM)
	}
	if len(rep.SmolLM2.Gen) > 0 {
		printSmolLM2(w, rep.SmolLM2)
	}
	if len(rep.Explore) > 0 {
		printExplore(w, rep.Explore)
	}
	if len(rep.Devices) > 0 {
		printDevices(w, rep.Devices, rep.Machine.CPUs)
	}
	if rep.Modern != nil {
		printModern(w, rep.Modern)
	}
	if len(rep.Memory) > 0 {
		fmt.Fprintf(w, "\n## Peak memory of one attention forward pass (q, k, v [1, 8, L, 64] float32; one process each)\n\n")
		printMemTable(w, rep.Memory)
	}
	if len(rep.Checkpoint) > 0 {
		fmt.Fprintf(w, "\n## Peak memory of the gradients of a stack of pre-LN blocks, with and without checkpointing\n\n")
		printMemTable(w, rep.Checkpoint)
	}
	if len(rep.BlockGrad) > 0 {
		fmt.Fprintf(w, "\n## One gradient step of a causal pre-LN block, plain vs flash attention (B1 E512 h8 float32; one process each)\n\n")
		printBlockGradTable(w, rep.BlockGrad)
	}
	if len(rep.Goals) > 0 {
		fmt.Fprintf(w, "\n## Goals\n\n")
		if rep.Machine.Busy != "" {
			fmt.Fprintf(w, "Measured on a busy machine (see the warning at the top): the ratios flatter mhalab.\n\n")
		}
		fmt.Fprintf(w, "| goal | measured | |\n|---|---|---|\n")
		for _, g := range rep.Goals {
			fmt.Fprintf(w, "| %s | %s | %s |\n", g.Goal, g.Measured, map[bool]string{true: "met", false: "missed"}[g.Met])
		}
	}
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

func writeJSON(path string, rep *benchReport) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	data, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return err
	}
	repo := ""
	if script := findRepoFile(filepath.Join("parity", "bench_torch.py")); script != "" {
		repo = filepath.Dir(filepath.Dir(script))
	}
	home, _ := os.UserHomeDir()
	return atomicfile.WriteFile(path, append(portablePaths(data, repo, home), '\n'))
}

// portablePaths returns a report's JSON with the paths under the repository's folder written
// from "." and those under the home folder from "~" (either folder "" or "/": left alone). The
// reports in docs/bench render into docs/performance.md in any checkout, as any user: an H200
// report naming the device's /work/main/build/gpu/… failed that check in a fresh clone, and the
// reports naming /root/… failed it for every user but root.
func portablePaths(data []byte, repo, home string) []byte {
	for _, r := range []struct{ from, to string }{{repo, "."}, {home, "~"}} {
		if from := strings.TrimSuffix(r.from, "/"); from != "" {
			data = bytes.ReplaceAll(data, []byte(from+"/"), []byte(r.to+"/"))
		}
	}
	return data
}

// loadAverage returns the 1, 5 and 15-minute load averages ("?" where unknown).
func loadAverage() string {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(data))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}

// cpuModel returns the CPU's model name from /proc/cpuinfo ("?" where unknown).
func cpuModel() string {
	data, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return "?"
	}
	for _, line := range strings.Split(string(data), "\n") {
		if name, value, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(name) == "model name" {
			return strings.TrimSpace(value)
		}
	}
	return "?"
}

func memTotal() string {
	data, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return "?"
	}
	for _, line := range strings.Split(string(data), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "MemTotal:" {
			var kb int64
			if _, err := fmt.Sscan(f[1], &kb); err == nil {
				return humanize.IBytes(uint64(kb) * 1024)
			}
		}
	}
	return "?"
}

// printMiniLM prints the minilm suite's table.
func printMiniLM(w io.Writer, rows []minilmResult) {
	fmt.Fprintf(w, "\n## Sentence embeddings, all-MiniLM-L6-v2 (tokenise + encode + mean pooling + L2), float32\n\n")
	fmt.Fprintln(w, "| implementation | backend | batch | mean tokens | compile | median | sentences/s | × PyTorch | max |Δ| vs PyTorch |")
	fmt.Fprintln(w, "|---|---|---:|---:|---:|---:|---:|---:|---:|")
	for _, r := range rows {
		switch {
		case r.Note != "":
			fmt.Fprintf(w, "| %s | %s | %d | | | %s |||||\n", r.Impl, r.Backend, r.Batch, r.Note)
			continue
		case r.Error != "":
			fmt.Fprintf(w, "| %s | %s | %d | | | error: %s |||||\n", r.Impl, r.Backend, r.Batch, r.Error)
			continue
		}
		compile, vs, diff := "—", "—", "—"
		if r.CompileMS > 0 {
			compile = FormatMS(r.CompileMS)
		}
		if r.VsTorch > 0 {
			vs = fmt.Sprintf("%.2f", r.VsTorch)
		}
		if r.MaxDiffFromTorch > 0 {
			diff = fmt.Sprintf("%.1e", r.MaxDiffFromTorch)
		}
		fmt.Fprintf(w, "| %s | %s | %d | %.1f | %s | %s | %.1f | %s | %s |\n", r.Impl, r.Backend, r.Batch, r.MeanTokens,
			compile, FormatMS(r.MedianMS), r.SentencesPerS, vs, diff)
	}
	fmt.Fprintln(w, "\n× PyTorch: median time over PyTorch's (below 1: faster). PyTorch uses its SDPA attention, mhalab its plain head-parallel attention (no weights returned).")
}

// printSmolLM2 prints the smollm2 suite's tables.
func printSmolLM2(w io.Writer, rep smollm2Report) {
	fmt.Fprintf(w, "\n## Text generation, SmolLM2-135M-Instruct (greedy, batch 1)\n\n")
	fmt.Fprintln(w, "| implementation | backend | prompt tokens | new tokens | first run | prefill | prefill tokens/s | decode ms/token | decode tokens/s | decode × PyTorch | decode × llama.cpp | tokens = PyTorch's |")
	fmt.Fprintln(w, "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
	for _, r := range rep.Gen {
		switch {
		case r.Note != "":
			fmt.Fprintf(w, "| %s | %s | %d | %d | %s ||||||||\n", r.Impl, r.Backend, r.PromptTokens, r.NewTokens, r.Note)
			continue
		case r.Error != "":
			fmt.Fprintf(w, "| %s | %s | %d | %d | error: %s ||||||||\n", r.Impl, r.Backend, r.PromptTokens, r.NewTokens, r.Error)
			continue
		}
		first, vs, vsLlama, same := "—", "—", "—", "—"
		if r.FirstRunMS > 0 {
			first = FormatMS(r.FirstRunMS)
		}
		if r.DecodeVsTorch > 0 {
			vs = fmt.Sprintf("%.2f", r.DecodeVsTorch)
			same = fmt.Sprintf("%d/%d", r.SameAsTorch, r.NewTokens)
		}
		if r.DecodeVsLlama > 0 {
			vsLlama = fmt.Sprintf("%.2f", r.DecodeVsLlama)
		}
		fmt.Fprintf(w, "| %s | %s | %d | %d | %s | %s | %.1f | %s | %.2f | %s | %s | %s |\n", r.Impl, r.Backend, r.PromptTokens, r.NewTokens,
			first, FormatMS(Median(r.PrefillMS)), r.PrefillTokPerS, FormatMS(r.DecodeMSPerTok), r.DecodeTokPerS, vs, vsLlama, same)
	}
	rounds := ""
	if rep.Rounds > 1 {
		rounds = fmt.Sprintf(" llama.cpp and the backends are timed in %d alternating rounds (llama.cpp, each backend, llama.cpp, …; each median pools its rounds), PyTorch once before them;", rep.Rounds)
	}
	fmt.Fprintln(w, "\nMedians over the timed runs;"+rounds+" prefill: the prompt in one pass (its last logits give the first token); decode: the other new tokens, one step each with the KV cache; first run (mhalab): compiles both graphs. decode × PyTorch, × llama.cpp: tokens/s over that anchor's (above 1: faster); PyTorch (transformers) dequantises the GGUF to float32; llama.cpp, and mhalib where its row says packed, compute with the weights as stored (Q4_1, embedding Q8_0). tokens = PyTorch's: leading generated tokens equal to PyTorch's.")
	if len(rep.KV) == 0 {
		return
	}
	fmt.Fprintf(w, "\n## KV cache of SmolLM2-135M-Instruct (30 layers, head 64, float32): grouped-query vs one key/value head per query head\n\n")
	fmt.Fprintln(w, "| key/value heads | query heads | backend | positions filled / capacity | measured bytes | kvcatalog.Bytes | max \\|Δlogit\\| vs 3 heads |")
	fmt.Fprintln(w, "|---:|---:|---|---:|---:|---:|---:|")
	for _, r := range rep.KV {
		if r.Error != "" {
			fmt.Fprintf(w, "| %d | %d | %s | error: %s ||||\n", r.KVHeads, r.QueryHeads, r.Backend, r.Error)
			continue
		}
		diff := "—"
		if r.KVHeads != rep.KV[0].KVHeads {
			diff = fmt.Sprintf("%.1e", r.MaxLogitDiff)
		}
		fmt.Fprintf(w, "| %d | %d | %s | %d / %d | %d (%s) | %d | %s |\n", r.KVHeads, r.QueryHeads, r.Backend, r.Filled, r.Capacity,
			r.Bytes, humanize.IBytes(uint64(r.Bytes)), r.Formula, diff)
	}
	fmt.Fprintln(w, "\nMeasured: the bytes of the session's cache tensors (keys and values of every layer) after filling it. The 9-head model repeats each key/value head's k_proj/v_proj rows for its 3 query heads (Model.WithKVHeads): the same model, 3× the cache.")
}
