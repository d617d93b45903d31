package bench

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/gomlx/gomlx/backends"
	"github.com/mhalab/mhalab/models/minilm"
)

// Suite minilm: sentences per second of all-MiniLM-L6-v2 sentence embeddings (tokenise, encode,
// pool, normalise) on a batch of short sentences, on every backend and on PyTorch
// (transformers + pooling, models/minilm/bench_torch.py) in the same run.

// minilmSentences returns n short sentences of 12 to 14 tokens ([CLS] and [SEP] included),
// the same every run.
func minilmSentences(n int) []string {
	subjects := []string{"The young doctor", "A tired student", "My old neighbour", "The new manager", "A small child", "Our favourite teacher", "The local baker", "A quiet engineer"}
	verbs := []string{"carefully read", "quickly painted", "slowly repaired", "happily sold"}
	objects := []string{"the broken wooden chair", "a long letter from home", "the red bicycle outside", "an old map of the city"}
	out := make([]string, 0, n)
	for i := 0; len(out) < n; i++ {
		out = append(out, fmt.Sprintf("%s %s %s.", subjects[i%len(subjects)], verbs[(i/len(subjects))%len(verbs)], objects[(i/3)%len(objects)]))
	}
	return out
}

type minilmResult struct {
	Backend          string    `json:"backend"` // backend spec, or "torch cpu"
	Impl             string    `json:"impl"`    // "mhalab models/minilm" or "PyTorch … transformers …"
	Batch            int       `json:"batch"`
	MeanTokens       float64   `json:"mean_tokens"`
	CompileMS        float64   `json:"compile_ms,omitempty"`
	TimesMS          []float64 `json:"times_ms,omitempty"`
	MedianMS         float64   `json:"median_ms"`
	SentencesPerS    float64   `json:"sentences_per_s"`
	VsTorch          float64   `json:"vs_torch,omitempty"`            // time / PyTorch's time
	MaxDiffFromTorch float64   `json:"max_diff_from_torch,omitempty"` // max |Δ| of the embeddings
	Error            string    `json:"error,omitempty"`
	Note             string    `json:"note,omitempty"`
}

// benchMiniLM times the suite: PyTorch first (when a Python with transformers is found), then
// each backend. A missing model is a note, not an error (the setup step may have been skipped).
func benchMiniLM(cfg Config, python string, order []string, live map[string]backends.Backend) []minilmResult {
	batch := 32
	if cfg.Quick {
		batch = 4
	}
	sentences := minilmSentences(batch)
	dir, err := minilm.DefaultDir()
	if err == nil {
		err = minilm.CheckFiles(dir)
	}
	if err != nil {
		return []minilmResult{{Impl: "mhalab models/minilm", Batch: batch, Note: "all-MiniLM-L6-v2 not installed (scripts/setup.sh --only minilm): " + err.Error()}}
	}
	m, err := minilm.Load(dir)
	if err != nil {
		return []minilmResult{{Impl: "mhalab models/minilm", Batch: batch, Error: err.Error()}}
	}
	encs, _, err := m.Encode(sentences, minilm.DefaultMaxTokens)
	if err != nil {
		return []minilmResult{{Impl: "mhalab models/minilm", Batch: batch, Error: err.Error()}}
	}
	tokens := 0
	for _, e := range encs {
		tokens += e.Len()
	}
	meanTokens := float64(tokens) / float64(batch)

	var results []minilmResult
	torch, torchEmb := benchMiniLMTorch(cfg, python, dir, sentences)
	torch.Batch, torch.MeanTokens = batch, meanTokens
	results = append(results, torch)
	warmup, runs := 1, 20
	if cfg.Quick {
		runs = 3
	}
	for _, spec := range order {
		r := minilmResult{Backend: spec, Impl: "mhalab models/minilm", Batch: batch, MeanTokens: meanTokens}
		var embs [][]float32
		run := func() error {
			e, _, err := m.Encode(sentences, minilm.DefaultMaxTokens) // tokenising is part of the work
			if err != nil {
				return err
			}
			embs, err = m.Embed(live[spec], e, batch)
			return err
		}
		t, err := timeRuns(run, run, warmup, runs, cfg.Budget) // the first pass compiles
		if err != nil {
			r.Error = err.Error()
			results = append(results, r)
			continue
		}
		r.CompileMS, r.TimesMS, r.MedianMS = t.compileMS, t.timesMS, Median(t.timesMS)
		r.SentencesPerS = float64(batch) / (r.MedianMS / 1000)
		if torch.MedianMS > 0 {
			r.VsTorch = r.MedianMS / torch.MedianMS
		}
		for i := range torchEmb {
			for j := range torchEmb[i] {
				r.MaxDiffFromTorch = math.Max(r.MaxDiffFromTorch, math.Abs(float64(embs[i][j])-torchEmb[i][j]))
			}
		}
		results = append(results, r)
	}
	return results
}

// benchMiniLMTorch runs models/minilm/bench_torch.py; the result carries a note when PyTorch
// or transformers cannot be run.
func benchMiniLMTorch(cfg Config, python, dir string, sentences []string) (minilmResult, [][]float64) {
	r := minilmResult{Backend: "torch cpu", Impl: "PyTorch"}
	script := findRepoFile(filepath.Join("models", "minilm", "bench_torch.py"))
	switch {
	case python == "":
		r.Note = torchNotInstalled
		return r, nil
	case script == "":
		r.Note = "PyTorch: models/minilm/bench_torch.py not found (run from the repository)"
		return r, nil
	}
	runs := 20
	if cfg.Quick {
		runs = 3
	}
	req, _ := json.Marshal(map[string]any{"model": dir, "sentences": sentences, "threads": cfg.Threads,
		"warmup": 1, "runs": runs, "budget_s": cfg.Budget.Seconds()})
	cmd := exec.Command(python, script)
	cmd.Stdin = bytes.NewReader(req)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	start := time.Now()
	if err := cmd.Run(); err != nil {
		r.Note = fmt.Sprintf("PyTorch: %s %s failed after %s: %v: %s", python, script, time.Since(start).Round(time.Second), err, lastLines(errOut.String(), 3))
		return r, nil
	}
	var ans struct {
		Error        string      `json:"error"`
		Torch        string      `json:"torch"`
		Transformers string      `json:"transformers"`
		Attention    string      `json:"attention"`
		Threads      int         `json:"threads"`
		TimesMS      []float64   `json:"times_ms"`
		MedianMS     float64     `json:"median_ms"`
		Embeddings   [][]float64 `json:"embeddings"`
	}
	if err := json.Unmarshal(out.Bytes(), &ans); err != nil {
		r.Note = fmt.Sprintf("PyTorch: unreadable answer from %s: %v", script, err)
		return r, nil
	}
	if ans.Error != "" {
		r.Note = "PyTorch: " + ans.Error
		return r, nil
	}
	r.Impl = fmt.Sprintf("PyTorch %s, transformers %s (%s), %d threads", ans.Torch, ans.Transformers, ans.Attention, ans.Threads)
	r.TimesMS, r.MedianMS = ans.TimesMS, ans.MedianMS
	r.SentencesPerS = float64(len(sentences)) / (r.MedianMS / 1000)
	return r, ans.Embeddings
}
