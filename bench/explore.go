package bench

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/mhalab/mhalab/explorer/live"
)

// Suite explore: how fast the live explorer (`mhalab explore`, explorer/live) answers. One
// update is what the page asks for after a keystroke (tokenise, run the model padded to its
// bucket with every layer's attention, summaries, encode the answer as the page gets it); one
// generated token is a step (sample, feed the KV cache, the new sequence's attention and
// next-token distribution). The limits: ≤ 300 ms per update of a 32-token sentence with
// MiniLM, ≤ 500 ms per generated token with SmolLM2, on xla:cpu. Compilation happens once per
// bucket: the first call is timed apart.

// exploreLimitMiniLM and exploreLimitSmolLM2 are the limits, in milliseconds.
const (
	exploreLimitMiniLM  = 300
	exploreLimitSmolLM2 = 500
)

type exploreResult struct {
	Backend   string    `json:"backend"`
	Model     string    `json:"model"`
	What      string    `json:"what"` // "update" (a keystroke) or "token" (a generation step)
	Tokens    int       `json:"tokens"`
	Bucket    int       `json:"bucket"`
	FirstMS   float64   `json:"first_ms"` // the first call, compilation included
	TimesMS   []float64 `json:"times_ms,omitempty"`
	MedianMS  float64   `json:"median_ms"`
	MaxMS     float64   `json:"max_ms"`
	LimitMS   float64   `json:"limit_ms"`
	Load      string    `json:"load"`
	Error     string    `json:"error,omitempty"`
	Note      string    `json:"note,omitempty"`
	Generated []int     `json:"generated,omitempty"`
}

// explore32 is a sentence of 32 MiniLM tokens ([CLS] and [SEP] included); variant i changes one
// word, as typing does, keeping the length.
func explore32(i int) string {
	words := []string{"dog", "cat", "fox", "cow", "owl", "bee", "ant", "elk"}
	return fmt.Sprintf("The quick brown %s jumped over the lazy dog while the children in the garden were laughing loudly at the funny old clown and his big red hat today.", words[i%len(words)])
}

// benchExplore times both models on every backend in order.
func benchExplore(cfg Config, order []string) []exploreResult {
	runs := 20
	steps := 16
	if cfg.Quick {
		runs, steps = 4, 4
	}
	var out []exploreResult
	for _, spec := range order {
		out = append(out, exploreMiniLM(spec, runs))
		out = append(out, exploreSmolLM2(spec, steps))
	}
	return out
}

func exploreMiniLM(spec string, runs int) exploreResult {
	r := exploreResult{Backend: spec, Model: "all-MiniLM-L6-v2", What: "update", LimitMS: exploreLimitMiniLM}
	m, err := live.Open(live.NameMiniLM, spec, 0)
	if err != nil {
		return exploreFailed(r, err)
	}
	defer m.Close()
	for i := range runs + 1 {
		res, ms, err := timed(m.Analyze, live.Request{Text: explore32(i)})
		if err != nil {
			return exploreFailed(r, err)
		}
		if i == 0 {
			r.FirstMS, r.Tokens, r.Bucket = ms, len(res.Tokens), res.Bucket
			continue
		}
		r.TimesMS = append(r.TimesMS, ms)
	}
	return exploreDone(r)
}

func exploreSmolLM2(spec string, steps int) exploreResult {
	r := exploreResult{Backend: spec, Model: "SmolLM2-135M-Instruct", What: "token", LimitMS: exploreLimitSmolLM2}
	m, err := live.Open(live.NameSmolLM2, spec, 64)
	if err != nil {
		return exploreFailed(r, err)
	}
	defer m.Close()
	const prompt = "The quick brown fox jumped over the lazy dog while the children"
	// Warm up every bucket the steps reach (16 and 32 positions) with analyses, as a reader's
	// typing would, then time the steps.
	for _, text := range []string{prompt, prompt + strings.Repeat(" and the dog", 4)} {
		start := time.Now()
		if _, err := m.Analyze(live.Request{Text: text}); err != nil {
			return exploreFailed(r, err)
		}
		r.FirstMS += msSince(start)
	}
	for i := range steps + 1 {
		res, ms, err := timed(m.Step, live.Request{Text: prompt, Reset: i == 0})
		if err != nil {
			return exploreFailed(r, err)
		}
		r.Generated, r.Bucket = res.Generated, res.Bucket
		if i == 0 {
			r.FirstMS += ms // the prompt's feed compiles the cache's programs
			r.Tokens = len(res.IDs)
			continue
		}
		r.TimesMS = append(r.TimesMS, ms)
		if res.Done {
			break
		}
	}
	return exploreDone(r)
}

// timed runs f(req) and encodes its answer as the server does; it returns the answer and the
// milliseconds both took.
func timed(f func(live.Request) (*live.Result, error), req live.Request) (*live.Result, float64, error) {
	start := time.Now()
	res, err := f(req)
	if err == nil {
		_, err = json.Marshal(res)
	}
	return res, msSince(start), err
}

func exploreFailed(r exploreResult, err error) exploreResult {
	if strings.Contains(err.Error(), "setup.sh") {
		r.Note = "not installed: " + err.Error()
	} else {
		r.Error = err.Error()
	}
	r.Load = loadAverage()
	return r
}

func exploreDone(r exploreResult) exploreResult {
	r.MedianMS = Median(r.TimesMS)
	for _, t := range r.TimesMS {
		r.MaxMS = max(r.MaxMS, t)
	}
	r.Load = loadAverage()
	return r
}

// printExplore prints the explore suite's table.
func printExplore(w io.Writer, rows []exploreResult) {
	fmt.Fprintf(w, "\n## Live explorer (mhalab explore): one update per keystroke, one step per generated token\n\n")
	fmt.Fprintln(w, "| model | backend | what | tokens (bucket) | first (compiles) | median | max | limit | met | load (1, 5, 15 min) |")
	fmt.Fprintln(w, "|---|---|---|---:|---:|---:|---:|---:|:---:|---|")
	for _, r := range rows {
		if msg := r.Note + r.Error; msg != "" {
			if r.Error != "" {
				msg = "error: " + r.Error
			}
			fmt.Fprintf(w, "| %s | %s | %s | %s |||||||\n", r.Model, r.Backend, r.What, msg)
			continue
		}
		met := "✗"
		if r.MedianMS <= r.LimitMS {
			met = "✓"
		}
		fmt.Fprintf(w, "| %s | %s | %s | %d (%d) | %s | %s | %s | %s | %s | %s |\n", r.Model, r.Backend, r.What, r.Tokens, r.Bucket,
			FormatMS(r.FirstMS), FormatMS(r.MedianMS), FormatMS(r.MaxMS), FormatMS(r.LimitMS), met, r.Load)
	}
	fmt.Fprintln(w, "\nupdate: the answer to one keystroke on a 32-token sentence (run padded to its bucket, every layer's attention, summaries, the answer encoded); "+
		"token: one generation step (sample, KV cache feed, attention and distribution of the new sequence; tokens: the prompt's). "+
		"The limits are the issue's, stated for xla:cpu on 2 cores; met compares the median.")
}
