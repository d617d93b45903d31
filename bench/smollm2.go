package bench

import (
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"time"

	"github.com/gomlx/gomlx/backends"
	"github.com/gomlx/gomlx/pkg/core/dtypes"

	"github.com/mhalab/mhalab/mhalib/kvcatalog"
	"github.com/mhalab/mhalab/models/smollm2"
)

// Suite smollm2: greedy generation with SmolLM2-135M-Instruct — prefill tokens/s (the prompt in
// one pass) and decode tokens/s (one token per step with the KV cache) on every backend and with
// transformers on PyTorch (models/smollm2/bench_torch.py, the same GGUF file and prompt ids) and
// with llama.cpp when llama-cpp-python is installed (bench/llamacpp.go: the same file with its
// weights kept quantised) in the same run, llama.cpp in rounds alternating with the backends;
// and the KV cache's bytes with the model's 3 key/value heads against the 9 that plain
// multi-head attention would need (Model.WithKVHeads(9): the same logits), measured from the
// session's cache tensors after filling it.

// smollm2Prompt is the suite's prompt (the first smollm2QuickTokens tokens of it with --quick).
const smollm2Prompt = "The history of the printing press begins in the fifteenth century, when Johannes " +
	"Gutenberg, a goldsmith from Mainz, combined movable metal type, oil-based ink and a wooden press " +
	"adapted from those used to make wine. Before his invention, books were copied by hand, which " +
	"made them rare and expensive. Within fifty years, printing shops had opened in more than two " +
	"hundred European cities, and millions of books had been produced. Historians often argue that " +
	"the printing press changed"

const smollm2QuickTokens = 16

type smollm2Settings struct {
	promptTokens int // 0: the whole prompt
	newTokens    int
	runs         int // timed runs per round
	rounds       int // rounds of llama.cpp and the backends (timeInRounds)
	kvContext    int // KV-cache positions measured
	kvChunk      int // tokens fed per step while filling the cache
}

func smollm2Config(quick bool) smollm2Settings {
	if quick {
		return smollm2Settings{promptTokens: smollm2QuickTokens, newTokens: 4, runs: 1, rounds: 2, kvContext: 64, kvChunk: 16}
	}
	return smollm2Settings{newTokens: 32, runs: 3, rounds: 3, kvContext: 2048, kvChunk: 128}
}

type smollm2Result struct {
	Backend        string    `json:"backend"` // backend spec, or "torch cpu"
	Impl           string    `json:"impl"`
	PromptTokens   int       `json:"prompt_tokens"`
	NewTokens      int       `json:"new_tokens"`
	FirstRunMS     float64   `json:"first_run_ms,omitempty"` // mhalab: includes compiling the prefill and step graphs
	PrefillMS      []float64 `json:"prefill_ms,omitempty"`
	DecodeMS       []float64 `json:"decode_ms,omitempty"` // the NewTokens − 1 single-token steps, per run
	PrefillTokPerS float64   `json:"prefill_tokens_per_s"`
	DecodeMSPerTok float64   `json:"decode_ms_per_token"`
	DecodeTokPerS  float64   `json:"decode_tokens_per_s"`
	DecodeVsTorch  float64   `json:"decode_vs_torch,omitempty"`     // decode tokens/s over PyTorch's
	DecodeVsLlama  float64   `json:"decode_vs_llama_cpp,omitempty"` // decode tokens/s over llama.cpp's
	IDs            []int     `json:"ids,omitempty"`
	SameAsTorch    int       `json:"same_as_torch"` // leading generated tokens equal to PyTorch's
	Error          string    `json:"error,omitempty"`
	Note           string    `json:"note,omitempty"`
}

type kvResult struct {
	Backend      string  `json:"backend"`
	KVHeads      int     `json:"kv_heads"`
	QueryHeads   int     `json:"query_heads"`
	Capacity     int     `json:"capacity"`
	Filled       int     `json:"filled"`
	Bytes        int64   `json:"bytes"`         // measured: Session.CacheBytes
	Formula      int64   `json:"formula_bytes"` // kvcatalog.Bytes
	MaxLogitDiff float64 `json:"max_logit_diff_vs_gqa,omitempty"`
	Error        string  `json:"error,omitempty"`
}

type smollm2Report struct {
	Rounds int             `json:"rounds,omitempty"` // rounds of llama.cpp and the backends (none before 2026-12-05)
	Gen    []smollm2Result `json:"generation,omitempty"`
	KV     []kvResult      `json:"kv_cache,omitempty"`
}

// benchSmolLM2 runs the suite: PyTorch (python) first, then llama.cpp (llamaPython) and the
// backends in alternating rounds (timeInRounds), then the KV-cache measurement on xla:cpu (else
// the first backend). A missing model is a note, not an error; so is a missing PyTorch or
// llama.cpp.
func benchSmolLM2(cfg Config, python, llamaPython string, order []string, live map[string]backends.Backend) smollm2Report {
	s := smollm2Config(cfg.Quick)
	var rep smollm2Report
	path, err := smollm2.CheckDefault()
	if err != nil {
		rep.Gen = []smollm2Result{{Impl: "mhalab models/smollm2", Note: "SmolLM2-135M-Instruct not installed (scripts/setup.sh --only smollm2): " + err.Error()}}
		return rep
	}
	m, err := smollm2.Open(path)
	if err != nil {
		rep.Gen = []smollm2Result{{Impl: "mhalab models/smollm2", Error: err.Error()}}
		return rep
	}
	prompt := m.Tokenizer.Encode(smollm2Prompt)
	if s.promptTokens > 0 {
		prompt = prompt[:s.promptTokens]
	}
	torch := benchSmolLM2Torch(cfg, python, path, prompt, s)
	// Every backend's session is opened (and its graphs compiled by a first, untimed run)
	// before the rounds, and kept until they end.
	gens := make([]*smollm2Gen, len(order))
	for i, spec := range order {
		r := smollm2Result{Backend: spec, Impl: "mhalab models/smollm2", PromptTokens: len(prompt), NewTokens: s.newTokens}
		withFastGo(spec, func() { gens[i] = startSmolLM2(live[spec], m, prompt, r) })
	}
	var llama smollm2Result
	llamaRuns := &llamaAnchor{}
	anchor := func() bool { return llama.pool(llamaRuns.run(cfg, llamaPython, path, prompt, s)) }
	var timed []func()
	for i, spec := range order {
		timed = append(timed, func() { withFastGo(spec, func() { gens[i].time(s.runs) }) })
	}
	timeInRounds(s.rounds, anchor, timed)
	rep.Rounds = s.rounds
	llama.setRates()
	llama.compareWith(torch, smollm2Result{})
	rep.Gen = append(rep.Gen, torch, llama)
	for _, g := range gens {
		g.finalize() // before the KV-cache measurement loads the model again
		g.r.setRates()
		g.r.compareWith(torch, llama)
		rep.Gen = append(rep.Gen, g.r)
	}
	kvSpec := ""
	if len(order) > 0 {
		kvSpec = order[0]
	}
	if slices.Contains(order, "xla:cpu") {
		kvSpec = "xla:cpu"
	}
	if kvSpec != "" {
		withFastGo(kvSpec, func() { rep.KV = benchKVHeads(live[kvSpec], kvSpec, m, prompt, s) })
	}
	return rep
}

// # Rounds
//
// The machines this runs on change speed by up to 1.7× within minutes (2026-12-04: the same
// binary decoded at 186 and at 104 tokens/s in two runs an hour apart, while llama.cpp stayed
// at 130–135). Timed one after the other, llama.cpp's median and a backend's would then compare
// two different machines. timeInRounds alternates them instead — llama.cpp, every backend,
// llama.cpp, every backend, … — and each side's median pools all its rounds, so both span the
// same stretch of time.

// timeInRounds calls anchor and then every backend's timing function, rounds times. An anchor
// that returns false (it could not run) is not called again.
func timeInRounds(rounds int, anchor func() bool, backends []func()) {
	anchorOK := true
	for range rounds {
		if anchorOK {
			anchorOK = anchor()
		}
		for _, b := range backends {
			b()
		}
	}
}

// pool adds one round of an anchor to r, the anchor's row over all rounds: the round's times
// (its ids are the same every round) and true, or — when the round has a note or an error —
// that round's row (the rounds before it are dropped: an anchor that failed is not compared)
// and false.
func (r *smollm2Result) pool(round smollm2Result) bool {
	if round.Note != "" || round.Error != "" || r.Backend == "" {
		*r = round
		return round.Note == "" && round.Error == ""
	}
	r.PrefillMS = append(r.PrefillMS, round.PrefillMS...)
	r.DecodeMS = append(r.DecodeMS, round.DecodeMS...)
	r.IDs = round.IDs
	return true
}

// compareWith fills r's ratios to the anchors' decode tokens/s and the count of leading tokens
// equal to PyTorch's (an anchor that did not run is left out).
func (r *smollm2Result) compareWith(torch, llama smollm2Result) {
	if r.Error != "" || r.DecodeTokPerS == 0 {
		return
	}
	if llama.DecodeTokPerS > 0 {
		r.DecodeVsLlama = r.DecodeTokPerS / llama.DecodeTokPerS
	}
	if torch.DecodeTokPerS > 0 {
		r.DecodeVsTorch = r.DecodeTokPerS / torch.DecodeTokPerS
		for r.SameAsTorch < len(r.IDs) && r.SameAsTorch < len(torch.IDs) && r.IDs[r.SameAsTorch] == torch.IDs[r.SameAsTorch] {
			r.SameAsTorch++
		}
	}
}

// argmaxOf returns the index of the largest logit (the first on ties).
func argmaxOf(x []float32) int {
	best := 0
	for i, v := range x {
		if v > x[best] {
			best = i
		}
	}
	return best
}

// smollm2Gen is one backend's generation: its session, kept over all rounds, and its row.
type smollm2Gen struct {
	r      smollm2Result
	runner *smollm2.Runner
	sess   *smollm2.Session
	prompt []int
}

// startSmolLM2 opens a session on backend with room for the prompt and r.NewTokens, and runs
// the generation once untimed (it compiles the prefill and the step graphs: r.FirstRunMS). A
// failure is the row's error; later calls of time then do nothing.
func startSmolLM2(backend backends.Backend, m *smollm2.Model, prompt []int, r smollm2Result) *smollm2Gen {
	g := &smollm2Gen{r: r, prompt: prompt}
	var err error
	if g.runner, err = m.NewRunner(backend); err != nil {
		g.r.Error = err.Error()
		return g
	}
	if g.runner.Packed() {
		g.r.Impl += ", weights packed as stored"
	} else {
		g.r.Impl += ", float32 weights"
	}
	if g.sess, err = g.runner.NewSession(len(prompt) + r.NewTokens); err != nil {
		g.r.Error = err.Error()
		return g
	}
	p, d, _, err := g.run()
	if err != nil {
		g.r.Error = err.Error()
	}
	g.r.FirstRunMS = p + d
	return g
}

// run generates r.NewTokens tokens greedily from the prompt after emptying the cache, and
// returns the prefill's and the decode steps' milliseconds and the ids.
func (g *smollm2Gen) run() (prefill, decode float64, ids []int, err error) {
	g.sess.Reset()
	t0 := time.Now()
	logits, err := g.sess.Feed(g.prompt)
	if err != nil {
		return 0, 0, nil, err
	}
	ids = append(ids, argmaxOf(logits))
	prefill = msSince(t0)
	t1 := time.Now()
	for len(ids) < g.r.NewTokens {
		if logits, err = g.sess.Feed(ids[len(ids)-1:]); err != nil {
			return 0, 0, nil, err
		}
		ids = append(ids, argmaxOf(logits))
	}
	return prefill, msSince(t1), ids, nil
}

// time adds runs timed generations to the row (none after an error).
func (g *smollm2Gen) time(runs int) {
	for range runs {
		if g.r.Error != "" {
			return
		}
		p, d, ids, err := g.run()
		if err != nil {
			g.r.Error = err.Error()
			return
		}
		g.r.PrefillMS, g.r.DecodeMS, g.r.IDs = append(g.r.PrefillMS, p), append(g.r.DecodeMS, d), ids
	}
}

// finalize frees the session and the runner's weights.
func (g *smollm2Gen) finalize() {
	if g.sess != nil {
		g.sess.Finalize()
	}
	if g.runner != nil {
		g.runner.Finalize()
	}
}

// setRates fills the per-token rates from the median times.
func (r *smollm2Result) setRates() {
	if len(r.PrefillMS) == 0 || r.Error != "" || r.Note != "" {
		return
	}
	r.PrefillTokPerS = float64(r.PromptTokens) / (Median(r.PrefillMS) / 1000)
	if r.NewTokens > 1 {
		r.DecodeMSPerTok = Median(r.DecodeMS) / float64(r.NewTokens-1)
		r.DecodeTokPerS = 1000 / r.DecodeMSPerTok
	}
}

// benchKVHeads fills a cache of s.kvContext positions with the model's key/value heads and with
// as many as query heads (the same model: Model.WithKVHeads), measuring the cache tensors' bytes
// and the largest difference of the last logits between the two.
func benchKVHeads(backend backends.Backend, spec string, m *smollm2.Model, prompt []int, s smollm2Settings) []kvResult {
	c := m.Config
	fill := make([]int, s.kvContext) // the prompt repeated
	for i := range fill {
		fill[i] = prompt[i%len(prompt)]
	}
	var out []kvResult
	var gqaLogits []float32
	for _, heads := range []int{c.NumKeyValueHeads, c.NumAttentionHeads} {
		r := kvResult{Backend: spec, KVHeads: heads, QueryHeads: c.NumAttentionHeads, Capacity: s.kvContext}
		r.Formula, _ = kvcatalog.Bytes(kvcatalog.Config{Layers: c.NumHiddenLayers, KVHeads: heads, HeadDim: c.HeadDim,
			Context: s.kvContext, Batch: 1, DType: dtypes.Float32})
		logits, err := func() ([]float32, error) {
			mm, err := m.WithKVHeads(heads)
			if err != nil {
				return nil, err
			}
			runner, err := mm.NewRunner(backend)
			if err != nil {
				return nil, err
			}
			defer runner.Finalize()
			sess, err := runner.NewSession(s.kvContext)
			if err != nil {
				return nil, err
			}
			defer sess.Finalize()
			var logits []float32
			for at := 0; at < len(fill); at += s.kvChunk {
				if logits, err = sess.Feed(fill[at:min(at+s.kvChunk, len(fill))]); err != nil {
					return nil, err
				}
			}
			r.Filled, r.Bytes = sess.Len(), sess.CacheBytes()
			return logits, nil
		}()
		if err != nil {
			r.Error = err.Error()
		} else if gqaLogits == nil {
			gqaLogits = logits
		} else {
			for i := range logits {
				r.MaxLogitDiff = math.Max(r.MaxLogitDiff, math.Abs(float64(logits[i]-gqaLogits[i])))
			}
		}
		out = append(out, r)
	}
	return out
}

// smollm2Answer is what bench_torch.py's and bench_llama.py's answers share.
type smollm2Answer struct {
	Error     string    `json:"error"`
	Threads   int       `json:"threads"`
	PrefillMS []float64 `json:"prefill_ms"`
	DecodeMS  []float64 `json:"decode_ms"`
	IDs       []int     `json:"ids"`
}

// runAnchor runs an anchor's script with python and decodes its answer into ans, whose shared
// part is common; it fills r's times and ids, or returns a note prefixed with who ("PyTorch",
// "llama.cpp") saying what failed: the run, the answer's error, or missing runs or ids; err is
// the script's failure to run (nil when it ran, even with a note).
func runAnchor(who, python, script string, req, ans any, common *smollm2Answer, r *smollm2Result, env ...string) (string, error) {
	if err := runScript(python, script, req, ans, env...); err != nil {
		return who + ": " + err.Error(), err
	}
	switch {
	case common.Error != "":
		return who + ": " + common.Error, nil
	case len(common.PrefillMS) == 0 || len(common.DecodeMS) != len(common.PrefillMS) || len(common.IDs) != r.NewTokens:
		return fmt.Sprintf("%s: %s returned %d prefill and %d decode times and %d ids (want ≥ 1, as many, and %d)",
			who, script, len(common.PrefillMS), len(common.DecodeMS), len(common.IDs), r.NewTokens), nil
	}
	r.PrefillMS, r.DecodeMS, r.IDs = common.PrefillMS, common.DecodeMS, common.IDs
	return "", nil
}

// anchorScript finds the anchor's script models/smollm2/NAME; the note says why the anchor cannot
// run (no Python: notInstalled; no script) and is empty when it can.
func anchorScript(anchor, python, name, notInstalled string) (script, note string) {
	script = findRepoFile(filepath.Join("models", "smollm2", name))
	switch {
	case python == "":
		return "", notInstalled
	case script == "":
		return "", fmt.Sprintf("%s: models/smollm2/%s not found (run from the repository)", anchor, name)
	}
	return script, ""
}

// smollm2Request is what bench_torch.py and bench_llama.py read on stdin: the GGUF file, the
// prompt's ids, how many tokens to generate, threads, warm-up and timed runs, budget.
func smollm2Request(cfg Config, model string, prompt []int, s smollm2Settings) map[string]any {
	return map[string]any{"model": model, "prompt_ids": prompt, "new_tokens": s.newTokens,
		"threads": cfg.Threads, "warmup": 1, "runs": s.runs, "budget_s": cfg.Budget.Seconds()}
}

// benchSmolLM2Torch runs models/smollm2/bench_torch.py; the result carries a note when PyTorch,
// transformers or its GGUF support cannot be run.
func benchSmolLM2Torch(cfg Config, python, model string, prompt []int, s smollm2Settings) smollm2Result {
	r := smollm2Result{Backend: "torch cpu", Impl: "PyTorch", PromptTokens: len(prompt), NewTokens: s.newTokens}
	script, note := anchorScript("PyTorch", python, "bench_torch.py", torchNotInstalled)
	if note != "" {
		r.Note = note
		return r
	}
	var ans struct {
		smollm2Answer
		Torch        string `json:"torch"`
		Transformers string `json:"transformers"`
		Attention    string `json:"attention"`
	}
	if r.Note, _ = runAnchor("PyTorch", python, script, smollm2Request(cfg, model, prompt, s), &ans, &ans.smollm2Answer, &r); r.Note != "" {
		return r
	}
	r.Impl = fmt.Sprintf("PyTorch %s, transformers %s (%s), %d threads", ans.Torch, ans.Transformers, ans.Attention, ans.Threads)
	r.SameAsTorch = len(r.IDs)
	r.setRates()
	return r
}
