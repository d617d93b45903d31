package bench

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/dustin/go-humanize"
	"github.com/gomlx/gomlx/backends"
	"github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/tensors"
	"github.com/gomlx/gomlx/pkg/ml/context"
	"github.com/mhalab/mhalab/mhalib"
	"github.com/mhalab/mhalab/mhalib/kvcatalog"
)

// Suite modern: attention of current LLMs, timed against PyTorch in the same run.
//
//   - Sliding-window attention: FlashAttention causal with Window(W, 0) (each query sees its last
//     W+1 keys) against full causal FlashAttention, and PyTorch's SDPA (is_causal, and the window
//     as a boolean mask) and flex_attention with a block mask (compiled with torch.compile in a
//     full run, eager in --quick), at the same shapes (parity/bench_modern_torch.py).
//   - Grouped-query decoding: tokens/s of one-token decoding steps through a stack of attention
//     layers with mhalib's KVCache (CachedSelfAttention.KVHeads), for several numbers of
//     key/value heads at the same width and number of query heads, and the same model in PyTorch.
//
// The cases compared with each other (causal and windowed flash; the models with different
// numbers of key/value heads) run alternately, pass by pass, so that a ratio sees one load.

// windowCase is one shape of the sliding-window comparison.
type windowCase struct {
	B, H, L, Dk, Window int
	Warmup, Runs        int
}

func (c windowCase) key() string   { return fmt.Sprintf("L%d", c.L) }
func (c windowCase) shape() string { return fmt.Sprintf("B%d h%d L%d dk%d", c.B, c.H, c.L, c.Dk) }

// flops counts the useful operations of causal attention (2 matrix products over the visible
// pairs, 4·dk each): L(L+1)/2 pairs per head, or about L·(W+1) with the window.
func (c windowCase) flops(window bool) float64 {
	pairs := float64(c.L) * float64(c.L+1) / 2
	if window {
		pairs = 0
		for i := range c.L {
			pairs += float64(min(i, c.Window) + 1)
		}
	}
	return 4 * float64(c.B*c.H*c.Dk) * pairs
}

// modernSettings are the suite's shapes.
type modernSettings struct {
	window   windowCase // xla backends and PyTorch
	goWindow windowCase // the pure-Go backend (a shorter sequence: it is much slower)
	decode   gqaDecodeModel
	kvHeads  []int // decoded with each; the first is MHA (= decode.Heads)
	flex     string
}

// gqaDecodeModel is the decoding model: Layers pre-LN attention layers of width Embed with Heads
// query heads, a cache of Context positions, Steps timed one-token steps at the end of it.
type gqaDecodeModel struct {
	Embed, Heads, Layers, Context, Steps int
}

func modernConfig(quick bool) modernSettings {
	if quick {
		w := windowCase{B: 1, H: 2, L: 1024, Dk: 16, Window: 128, Warmup: 1, Runs: 3}
		return modernSettings{window: w, goWindow: w, flex: "eager",
			decode: gqaDecodeModel{Embed: 64, Heads: 8, Layers: 1, Context: 64, Steps: 4}, kvHeads: []int{8, 2}}
	}
	return modernSettings{
		window:   windowCase{B: 1, H: 4, L: 8192, Dk: 64, Window: 512, Warmup: 1, Runs: 10},
		goWindow: windowCase{B: 1, H: 4, L: 4096, Dk: 64, Window: 512, Warmup: 1, Runs: 10},
		flex:     "compile",
		decode:   gqaDecodeModel{Embed: 2048, Heads: 32, Layers: 4, Context: 4096, Steps: 32},
		kvHeads:  []int{32, 8, 1},
	}
}

// windowResult is one row of the sliding-window table.
type windowResult struct {
	Backend   string    `json:"backend"` // backend spec, or "torch cpu"
	Impl      string    `json:"impl"`
	Shape     string    `json:"shape"`
	L         int       `json:"l"`
	Mask      string    `json:"mask"` // "causal" or "window W"
	Tiles     int       `json:"tiles,omitempty"`
	CompileMS float64   `json:"compile_ms"`
	TimesMS   []float64 `json:"times_ms"`
	MedianMS  float64   `json:"median_ms"`
	MinMS     float64   `json:"min_ms"`
	GFLOPS    float64   `json:"gflops"` // useful operations (visible pairs only) per second
	// VsCausal is median / the same implementation's full causal median (same backend, same L).
	VsCausal float64 `json:"vs_causal,omitempty"`
	// VsTorchSDPA is median / PyTorch SDPA's median for the same L and mask.
	VsTorchSDPA float64 `json:"vs_torch_sdpa,omitempty"`
	Error       string  `json:"error,omitempty"`
}

// gqaDecodeResult is one row of the decoding table.
type gqaDecodeResult struct {
	Backend     string    `json:"backend"`
	Model       string    `json:"model"`
	Heads       int       `json:"heads"`
	KVHeads     int       `json:"kv_heads"`
	CacheBytes  int64     `json:"cache_bytes"`          // measured: bytes of the cache tensors
	Formula     int64     `json:"cache_bytes_formula"`  // kvcatalog.Bytes for the same layout
	CompileMS   float64   `json:"compile_ms,omitempty"` // first step
	StepMS      float64   `json:"step_ms"`              // median per token
	TokensPerS  float64   `json:"tokens_per_s"`         //
	VsMHA       float64   `json:"vs_mha,omitempty"`     // tokens/s over the same backend's MHA tokens/s
	MaxDiffStep float64   `json:"max_diff_vs_sdpa"`     // last step's output vs the same layers without cache
	Runs        int       `json:"runs"`                 //
	Error       string    `json:"error,omitempty"`      //
	Note        string    `json:"note,omitempty"`       //
	TimesMS     []float64 `json:"times_ms,omitempty"`   //
}

// modernReport is the suite's part of the report.
type modernReport struct {
	Window   []windowResult     `json:"window,omitempty"`
	Decode   []gqaDecodeResult  `json:"decode,omitempty"`
	Torch    string             `json:"torch,omitempty"`
	FlexDiff map[string]float64 `json:"flex_vs_sdpa_max_diff,omitempty"`
	Notes    []string           `json:"notes,omitempty"`
}

// benchModern runs the suite: PyTorch first (both parts, one process), then each backend's
// window rows, each followed by PyTorch's window rows at its L again (pooled), then each backend's
// decoding.
func benchModern(cfg Config, python string, order []string, live map[string]backends.Backend, bar *progressBar) *modernReport {
	s := modernConfig(cfg.Quick)
	rep := &modernReport{}
	windows := []windowCase{s.window}
	if slices.Contains(order, "go") && s.goWindow != s.window {
		windows = append(windows, s.goWindow)
		rep.Notes = append(rep.Notes, fmt.Sprintf("The pure-Go backend runs the window comparison at L %d instead of %d, "+
			"to keep the run short (at least %d passes of full causal flash: %d warm-up, 3 timed); PyTorch is timed at both lengths.",
			s.goWindow.L, s.window.L, 3+s.goWindow.Warmup, s.goWindow.Warmup))
	}
	if cfg.TorchDevice != "cpu" {
		rep.Notes = append(rep.Notes, fmt.Sprintf("This suite times PyTorch on the CPU only (--torch-device %s is used by the torch suite).", cfg.TorchDevice))
	}
	bar.start("PyTorch: sliding window and GQA decoding")
	torchOK := benchModernTorch(cfg, python, s, windows, rep, true)
	if torchOK && len(order) > 0 {
		rep.Notes = append(rep.Notes, "PyTorch's window rows pool its runs before the backends and after each backend's window rows at the same L "+
			"(their times bracket the backend's, on a machine whose speed drifts).")
	}
	for _, spec := range order {
		w := s.window
		if spec == "go" || spec == GoWithoutFastGo {
			w = s.goWindow
		}
		bar.start(fmt.Sprintf("%s flash %s, causal and window %d", spec, w.shape(), w.Window))
		withFastGo(spec, func() { rep.Window = append(rep.Window, benchWindowFlash(live[spec], spec, w, cfg.Budget)...) })
		bar.start(fmt.Sprintf("PyTorch: sliding window %s (after %s)", w.shape(), spec))
		if torchOK {
			torchOK = benchModernTorch(cfg, python, s, []windowCase{w}, rep, false)
		}
	}
	for _, spec := range order {
		bar.start(fmt.Sprintf("%s GQA decoding Hq %d, Hkv %v", spec, s.decode.Heads, s.kvHeads))
		withFastGo(spec, func() {
			rep.Decode = append(rep.Decode, benchGQADecode(live[spec], spec, s.decode, s.kvHeads, cfg.Budget)...)
		})
	}
	modernRatios(rep)
	return rep
}

// benchWindowFlash times FlashAttention(q, k, v) causal, and causal with Window(W, 0), on
// q, k, v [B, h, L, dk] uniform in [-1, 1): both compiled, Warmup untimed passes of each, then
// timed passes alternating between the two (so that a change of the machine's load hits both
// alike) until Runs of each are done or both budgets are spent (at least 3 each).
func benchWindowFlash(backend backends.Backend, spec string, c windowCase, budget time.Duration) []windowResult {
	res := []windowResult{
		{Backend: spec, Impl: "mhalib FlashAttention", Shape: c.shape(), L: c.L, Mask: "causal"},
		{Backend: spec, Impl: "mhalib FlashAttention", Shape: c.shape(), L: c.L, Mask: fmt.Sprintf("window %d", c.Window)},
	}
	fail := func(err error) []windowResult {
		for i := range res {
			res[i].Error = err.Error()
		}
		return res
	}
	wins := []*mhalib.Window{nil, {Left: c.Window, Right: 0, Align: mhalib.AlignTopLeft}}
	q, k, v := uniformTensor(11, c.B, c.H, c.L, c.Dk), uniformTensor(12, c.B, c.H, c.L, c.Dk), uniformTensor(13, c.B, c.H, c.L, c.Dk)
	var execs []*graph.Exec
	for i, win := range wins {
		tiles, err := mhalib.FlashTiles(c.L, c.L, mhalib.DefaultFlashBlockQ, mhalib.DefaultFlashBlockK, mhalib.CausalTopLeft, win)
		if err != nil {
			return fail(err)
		}
		for _, t := range tiles { // in tiles of BlockQ × BlockK
			res[i].Tiles += (t.Row1 - t.Row0) * (t.Col1 - t.Col0) / (mhalib.DefaultFlashBlockQ * mhalib.DefaultFlashBlockK)
		}
		exec, err := graph.NewExec(backend, func(q, k, v *graph.Node) *graph.Node {
			f := mhalib.FlashAttention(q, k, v).Causal(mhalib.CausalTopLeft)
			if win != nil {
				f.Window(win.Left, win.Right, win.Align)
			}
			return f.Done() // [B, h, L, dk]
		})
		if err != nil {
			return fail(err)
		}
		defer exec.Finalize()
		start := time.Now()
		if err := exec.PreCompile(q, k, v); err != nil {
			return fail(err)
		}
		res[i].CompileMS = msSince(start)
		execs = append(execs, exec)
	}
	run := func(i int) (float64, error) {
		t0 := time.Now()
		out, err := execs[i].Exec(q, k, v)
		if err == nil {
			err = finalizeAll(out)
		}
		return msSince(t0), err
	}
	for range c.Warmup {
		for i := range execs {
			if _, err := run(i); err != nil {
				return fail(err)
			}
		}
	}
	start := time.Now()
	for len(res[1].TimesMS) < c.Runs {
		for i := range execs {
			ms, err := run(i)
			if err != nil {
				return fail(err)
			}
			res[i].TimesMS = append(res[i].TimesMS, ms)
		}
		if len(res[1].TimesMS) >= 3 && time.Since(start) > 2*budget {
			break
		}
	}
	for i := range res {
		res[i].MedianMS, res[i].MinMS = Median(res[i].TimesMS), slices.Min(res[i].TimesMS)
		res[i].GFLOPS = c.flops(i == 1) / (res[i].MedianMS * 1e6)
	}
	return res
}

// gqaLayers is the decoding model's graph: Layers pre-LN attention layers with the cache,
// x [B, n, E] at positions [pos, pos+n) → [B, n, E].
func gqaLayers(ctx *context.Context, m gqaDecodeModel, kvHeads int, cache *mhalib.KVCache, x, pos *graph.Node) *graph.Node {
	for i := range m.Layers {
		lctx := ctx.In(fmt.Sprintf("layer_%d", i))
		normed := mhalib.LayerNorm(lctx.In("norm"), x, mhalib.LayerNormEps)                                     // [B, n, E]
		x = graph.Add(x, mhalib.CachedSelfAttention(lctx, normed, m.Heads, cache, pos).KVHeads(kvHeads).Done()) // [B, n, E]
	}
	return x
}

// gqaDecoder is one model of the decoding comparison: its cache, variables and step graph.
type gqaDecoder struct {
	res   gqaDecodeResult
	cache *mhalib.KVCache
	ctx   *context.Context
	step  *context.Exec
	last  *tensors.Tensor // the last step's output [1, 1, E]
}

// benchGQADecode times one-token decoding steps of the model with each number of key/value
// heads: each model's first step compiles, then steps at positions Context−Steps+1 … Context−1
// are timed, alternating between the models (so that a change of the machine's load hits all
// alike), until Steps−1 steps are done or the budget per model is spent (at least 3 each).
// mhalib's KVCache attends over its whole capacity (masked), so a step's cost does not depend on
// how many positions are filled. The cache's bytes are read from its tensors. As a check, each
// model's last step is compared with one multi-position step over the same inputs (the cached
// path against the block path).
func benchGQADecode(backend backends.Backend, spec string, m gqaDecodeModel, kvHeads []int, budget time.Duration) []gqaDecodeResult {
	dk := m.Embed / m.Heads
	xs := uniformTensor(21, 1, m.Steps, m.Embed)
	flat := tensors.MustCopyFlatData[float32](xs)
	token := func(i int) *tensors.Tensor {
		return tensors.FromFlatDataAndDimensions(slices.Clone(flat[i*m.Embed:(i+1)*m.Embed]), 1, 1, m.Embed)
	}
	first := m.Context - m.Steps
	var models []*gqaDecoder
	for _, hkv := range kvHeads {
		d := &gqaDecoder{res: gqaDecodeResult{Backend: spec, Heads: m.Heads, KVHeads: hkv,
			Model: fmt.Sprintf("%d layers, E %d, Hq %d, dk %d, cache %d positions", m.Layers, m.Embed, m.Heads, dk, m.Context)}}
		models = append(models, d)
		var err error
		if d.cache, err = mhalib.NewKVCache(1, hkv, m.Context, dk, dk); err != nil {
			d.res.Error = err.Error()
			continue
		}
		d.ctx = mhalib.WithInit(context.New(), mhalib.InitXavierUniform)
		d.ctx.SetParam(context.ParamInitialSeed, int64(1))
		d.step, err = context.NewExec(backend, d.ctx, func(ctx *context.Context, x, pos *graph.Node) *graph.Node {
			return gqaLayers(ctx, m, hkv, d.cache, x, pos) // [1, 1, E]
		})
		if err != nil {
			d.res.Error = err.Error()
			continue
		}
		defer d.step.Finalize()
		start := time.Now()
		out, err := d.step.Exec(token(0), int32(first))
		if err != nil {
			d.res.Error = err.Error()
			continue
		}
		d.res.CompileMS = msSince(start)
		_ = finalizeAll(out)
		d.res.CacheBytes = cacheTensorBytes(d.ctx)
		d.res.Formula, _ = kvcatalog.Bytes(kvcatalog.Config{Layers: m.Layers, KVHeads: hkv, HeadDim: dk,
			Context: m.Context, DType: xs.DType()})
	}
	loop := time.Now()
	for i := 1; i < m.Steps; i++ {
		for _, d := range models {
			if d.res.Error != "" {
				continue
			}
			t0 := time.Now()
			out, err := d.step.Exec(token(i), int32(first+i))
			if err != nil {
				d.res.Error = err.Error()
				continue
			}
			d.res.TimesMS = append(d.res.TimesMS, msSince(t0))
			if d.last != nil {
				_ = d.last.FinalizeAll()
			}
			d.last = out[0]
		}
		if i >= 3 && time.Since(loop) > time.Duration(len(models))*budget {
			break
		}
	}
	var results []gqaDecodeResult
	for _, d := range models {
		if d.res.Error == "" {
			d.res.Runs = len(d.res.TimesMS)
			d.res.StepMS = Median(d.res.TimesMS)
			d.res.TokensPerS = 1000 / d.res.StepMS
			if err := d.check(backend, m, flat, first); err != nil {
				d.res.Error = err.Error()
			}
		}
		results = append(results, d.res)
	}
	return results
}

// check compares the last cached step with one step over the same Runs+1 inputs at position
// first (it rewrites the same keys and values; positions before first hold zeros in both):
// the last rows must agree (MaxDiffStep).
func (d *gqaDecoder) check(backend backends.Backend, m gqaDecodeModel, flat []float32, first int) error {
	n := d.res.Runs + 1
	prefill, err := context.NewExec(backend, d.ctx, func(ctx *context.Context, x, pos *graph.Node) *graph.Node {
		return gqaLayers(ctx, m, d.res.KVHeads, d.cache, x, pos) // [1, n, E]
	})
	if err != nil {
		return err
	}
	defer prefill.Finalize()
	seq := tensors.FromFlatDataAndDimensions(slices.Clone(flat[:n*m.Embed]), 1, n, m.Embed)
	full, err := prefill.Exec(seq, int32(first))
	if err != nil {
		return err
	}
	got, want := tensors.MustCopyFlatData[float32](d.last), tensors.MustCopyFlatData[float32](full[0])
	want = want[len(want)-m.Embed:]
	for i := range got {
		d.res.MaxDiffStep = math.Max(d.res.MaxDiffStep, math.Abs(float64(got[i]-want[i])))
	}
	_ = d.last.FinalizeAll()
	return finalizeAll(full)
}

// cacheTensorBytes returns the bytes of ctx's KV-cache tensors (variables in a "kv_cache"
// scope, where KVCache.Append creates them).
func cacheTensorBytes(ctx *context.Context) int64 {
	var n int64
	for v := range ctx.IterVariables() {
		if strings.Contains(v.Scope(), "kv_cache") {
			n += int64(v.Shape().Memory())
		}
	}
	return n
}

// benchModernTorch runs parity/bench_modern_torch.py for the window shapes and, if decode, the
// decoding model; what cannot be run becomes a note (and false). A window row PyTorch already has
// (the same implementation, L and mask) gets the new times pooled into it: its median and minimum
// are over all its runs.
func benchModernTorch(cfg Config, python string, s modernSettings, windows []windowCase, rep *modernReport, decode bool) bool {
	script := findRepoFile(filepath.Join("parity", "bench_modern_torch.py"))
	switch {
	case python == "":
		rep.Notes = append(rep.Notes, torchNotInstalled)
		return false
	case script == "":
		rep.Notes = append(rep.Notes, "PyTorch: parity/bench_modern_torch.py not found (run from the repository)")
		return false
	}
	var wcases []map[string]any
	for _, w := range windows {
		wcases = append(wcases, map[string]any{"key": w.key(), "batch": w.B, "heads": w.H, "seq": w.L, "dk": w.Dk,
			"window": w.Window, "warmup": w.Warmup, "runs": w.Runs, "budget_s": cfg.Budget.Seconds()})
	}
	dcases := []map[string]any{} // [] rather than null: the script iterates it
	if decode {
		for _, hkv := range s.kvHeads {
			dcases = append(dcases, map[string]any{"key": fmt.Sprintf("Hkv%d", hkv), "embed": s.decode.Embed, "heads": s.decode.Heads,
				"kv_heads": hkv, "layers": s.decode.Layers, "context": s.decode.Context, "steps": s.decode.Steps, "budget_s": cfg.Budget.Seconds()})
		}
	}
	req, _ := json.Marshal(map[string]any{"threads": cfg.Threads, "flex": s.flex, "window": wcases, "decode": dcases})
	cmd := exec.Command(python, script)
	cmd.Stdin = bytes.NewReader(req)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	start := time.Now()
	if err := cmd.Run(); err != nil {
		rep.Notes = append(rep.Notes, fmt.Sprintf("PyTorch: %s %s failed after %s: %v: %s", python, script,
			time.Since(start).Round(time.Second), err, lastLines(errOut.String(), 3)))
		return false
	}
	var ans struct {
		Error         string             `json:"error"`
		Torch         string             `json:"torch"`
		Threads       int                `json:"threads"`
		CPUCapability string             `json:"cpu_capability"`
		FlexNote      string             `json:"flex_note"`
		WindowMaxDiff map[string]float64 `json:"window_max_diff"`
		Window        []struct {
			Key       string    `json:"key"`
			Impl      string    `json:"impl"`
			Mask      string    `json:"mask"`
			CompileMS float64   `json:"compile_ms"`
			TimesMS   []float64 `json:"times_ms"`
			MedianMS  float64   `json:"median_ms"`
			MinMS     float64   `json:"min_ms"`
		} `json:"window"`
		Decode []struct {
			Key        string    `json:"key"`
			CacheBytes int64     `json:"cache_bytes"`
			TimesMS    []float64 `json:"times_ms"`
			MedianMS   float64   `json:"median_ms"`
		} `json:"decode"`
	}
	if err := json.Unmarshal(out.Bytes(), &ans); err != nil {
		rep.Notes = append(rep.Notes, fmt.Sprintf("PyTorch: unreadable answer from %s: %v", script, err))
		return false
	}
	if ans.Error != "" {
		rep.Notes = append(rep.Notes, "PyTorch: "+ans.Error)
		return false
	}
	if ans.FlexNote != "" && !slices.Contains(rep.Notes, ans.FlexNote) {
		rep.Notes = append(rep.Notes, ans.FlexNote)
	}
	rep.Torch = fmt.Sprintf("PyTorch %s (%s), %d threads, CPU capability %s", ans.Torch, python, ans.Threads, ans.CPUCapability)
	if rep.FlexDiff == nil {
		rep.FlexDiff = map[string]float64{}
	}
	for k, d := range ans.WindowMaxDiff {
		rep.FlexDiff[k] = max(rep.FlexDiff[k], d)
	}
	byKey := map[string]windowCase{}
	for _, w := range windows {
		byKey[w.key()] = w
	}
	for _, r := range ans.Window {
		w := byKey[r.Key]
		mask := "causal"
		if r.Mask == "window" {
			mask = fmt.Sprintf("window %d", w.Window)
		}
		row := windowResult{Backend: "torch cpu", Impl: "PyTorch " + r.Impl, Shape: w.shape(), L: w.L, Mask: mask, CompileMS: r.CompileMS}
		i := slices.IndexFunc(rep.Window, func(x windowResult) bool {
			return x.Backend == row.Backend && x.Impl == row.Impl && x.L == row.L && x.Mask == row.Mask
		})
		if i < 0 {
			rep.Window = append(rep.Window, row)
			i = len(rep.Window) - 1
		}
		p := &rep.Window[i]
		p.TimesMS = append(p.TimesMS, r.TimesMS...)
		if len(p.TimesMS) == 0 {
			p.Error = "PyTorch returned no times"
			continue
		}
		p.MedianMS, p.MinMS = Median(p.TimesMS), slices.Min(p.TimesMS)
		p.GFLOPS = w.flops(r.Mask == "window") / (p.MedianMS * 1e6)
	}
	for i, r := range ans.Decode {
		hkv := s.kvHeads[i]
		d := s.decode
		rep.Decode = append(rep.Decode, gqaDecodeResult{Backend: "torch cpu", Heads: d.Heads, KVHeads: hkv, CacheBytes: r.CacheBytes,
			Model:   fmt.Sprintf("%d layers, E %d, Hq %d, dk %d, cache %d positions", d.Layers, d.Embed, d.Heads, d.Embed/d.Heads, d.Context),
			TimesMS: r.TimesMS, StepMS: r.MedianMS, TokensPerS: 1000 / r.MedianMS, Runs: len(r.TimesMS),
			Note: "PyTorch " + ans.Torch + " SDPA enable_gqa"})
	}
	return true
}

// modernRatios fills VsCausal, VsTorchSDPA and VsMHA.
func modernRatios(rep *modernReport) {
	causal := map[string]float64{} // backend|impl|L → median of the full causal row
	sdpa := map[string]float64{}   // L|mask → PyTorch SDPA's median
	for _, r := range rep.Window {
		if r.Error != "" {
			continue
		}
		if r.Mask == "causal" {
			causal[fmt.Sprintf("%s|%s|%d", r.Backend, r.Impl, r.L)] = r.MedianMS
		}
		if strings.Contains(r.Impl, "SDPA") {
			sdpa[fmt.Sprintf("%d|%s", r.L, r.Mask)] = r.MedianMS
		}
	}
	for i, r := range rep.Window {
		if r.Error != "" || r.MedianMS <= 0 {
			continue
		}
		impl := r.Impl
		if strings.HasPrefix(impl, "PyTorch") {
			impl = "PyTorch SDPA is_causal" // PyTorch's window rows against its own full causal
		}
		if t, ok := causal[fmt.Sprintf("%s|%s|%d", r.Backend, impl, r.L)]; ok && r.Mask != "causal" {
			rep.Window[i].VsCausal = r.MedianMS / t
		}
		if t, ok := sdpa[fmt.Sprintf("%d|%s", r.L, r.Mask)]; ok {
			rep.Window[i].VsTorchSDPA = r.MedianMS / t
		}
	}
	mha := map[string]float64{} // backend → tokens/s with KVHeads = Heads
	for _, r := range rep.Decode {
		if r.Error == "" && r.KVHeads == r.Heads {
			mha[r.Backend] = r.TokensPerS
		}
	}
	for i, r := range rep.Decode {
		if t, ok := mha[r.Backend]; ok && r.Error == "" {
			rep.Decode[i].VsMHA = r.TokensPerS / t
		}
	}
}

// printModern prints the suite's two tables.
func printModern(w io.Writer, m *modernReport) {
	if len(m.Window) > 0 {
		fmt.Fprintf(w, "\n## Sliding-window attention vs full causal: q, k, v [B, h, L, dk] float32, causal, window = the last W+1 keys\n\n")
		if m.Torch != "" {
			fmt.Fprintf(w, "%s.\n\n", m.Torch)
		}
		fmt.Fprintln(w, "| implementation | backend | shape | mask | tiles 512×128 | compile | median | min | runs | GFLOP/s | × full causal | × PyTorch SDPA |")
		fmt.Fprintln(w, "|---|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|")
		rows := slices.Clone(m.Window)
		slices.SortStableFunc(rows, func(a, b windowResult) int { return b.L - a.L })
		for _, r := range rows {
			if r.Error != "" {
				fmt.Fprintf(w, "| %s | %s | %s | %s | error: %s ||||||||\n", r.Impl, r.Backend, r.Shape, r.Mask, r.Error)
				continue
			}
			tiles, compile, vsCausal, vsSDPA := "—", "—", "—", "—"
			if r.Tiles > 0 {
				tiles = fmt.Sprint(r.Tiles)
			}
			if r.CompileMS > 0 {
				compile = FormatMS(r.CompileMS)
			}
			if r.VsCausal > 0 {
				vsCausal = fmt.Sprintf("%.2f×", r.VsCausal)
			}
			if r.VsTorchSDPA > 0 {
				vsSDPA = fmt.Sprintf("%.2f×", r.VsTorchSDPA)
			}
			fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s | %s | %s | %d | %.1f | %s | %s |\n", r.Impl, r.Backend, r.Shape, r.Mask,
				tiles, compile, FormatMS(r.MedianMS), FormatMS(r.MinMS), len(r.TimesMS), r.GFLOPS, vsCausal, vsSDPA)
		}
		fmt.Fprintln(w, "\nGFLOP/s counts the visible pairs only (4·dk per pair). × full causal: median over the same implementation's full causal median "+
			"(PyTorch's rows: over SDPA is_causal); × PyTorch SDPA: over SDPA's median at the same L and mask. "+
			"tiles 512×128: the score tiles of mhalib.FlashTiles' plan at the default block sizes — a measure of the work the mask leaves, "+
			"not of the blocks each backend runs (XLA's window path uses 128×256 blocks; the go backend, query blocks without the tiles above the diagonal).")
		for _, key := range slices.Sorted(maps.Keys(m.FlexDiff)) {
			fmt.Fprintf(w, "flex_attention vs SDPA with the boolean mask at %s: max |Δ| %.1e.\n", key, m.FlexDiff[key])
		}
	}
	if len(m.Decode) > 0 {
		fmt.Fprintf(w, "\n## Grouped-query decoding: one token per step, KV cache (mhalib KVCache / preallocated tensors in PyTorch), float32\n\n")
		fmt.Fprintln(w, "| implementation | backend | model | KV heads | cache (tensors) | ms/token | tokens/s | runs | × MHA tokens/s | max abs. diff vs block step |")
		fmt.Fprintln(w, "|---|---|---|---:|---:|---:|---:|---:|---:|---:|")
		for _, r := range m.Decode {
			impl := "mhalib CachedSelfAttention"
			if r.Note != "" {
				impl = r.Note
			}
			if r.Error != "" {
				fmt.Fprintf(w, "| %s | %s | %s | %d | error: %s |||||\n", impl, r.Backend, r.Model, r.KVHeads, r.Error)
				continue
			}
			vs, diff := "—", "—"
			if r.VsMHA > 0 {
				vs = fmt.Sprintf("%.2f×", r.VsMHA)
			}
			if r.Backend != "torch cpu" {
				diff = fmt.Sprintf("%.1e", r.MaxDiffStep)
			}
			fmt.Fprintf(w, "| %s | %s | %s | %d | %s | %s | %.1f | %d | %s | %s |\n", impl, r.Backend, r.Model, r.KVHeads,
				humanize.IBytes(uint64(r.CacheBytes)), FormatMS(r.StepMS), r.TokensPerS, r.Runs, vs, diff)
		}
		formula := "kvcatalog.Bytes gives the same for every row"
		for _, r := range m.Decode {
			if r.Error == "" && r.Backend != "torch cpu" && r.CacheBytes != r.Formula {
				formula = fmt.Sprintf("kvcatalog.Bytes DIFFERS on %s, %d KV heads: %d bytes", r.Backend, r.KVHeads, r.Formula)
				break
			}
		}
		fmt.Fprintf(w, "\nEach layer: LayerNorm, q/k/v/o projections, attention over the whole cache (masked beyond the position), residual; "+
			"no MLP, no embedding. cache: bytes of the cache tensors, read from the tensors (%s). "+
			"max abs. diff vs block step: the last cached step against one step over the same inputs.\n", formula)
	}
	for _, n := range m.Notes {
		fmt.Fprintln(w, n)
	}
}
