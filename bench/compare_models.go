package bench

import (
	"fmt"
	"io"
)

// printSmolLM2Comparison prints, after printDecodeComparison, old → cur for the smollm2 suite's
// generation rows measured in both runs (same backend and implementation): decoding tokens/s
// then and now, and each run's own ratios to transformers' and to llama.cpp's tokens/s (> 1:
// faster than the anchor). Nothing when the current run has no smollm2 rows.
func printSmolLM2Comparison(w io.Writer, old, cur *benchReport) {
	if len(cur.SmolLM2.Gen) == 0 {
		return
	}
	id := func(r smollm2Result) string { return r.Backend + "|" + r.Impl }
	oldByID := indexRows(old.SmolLM2.Gen, id, func(r smollm2Result) bool { return r.Error == "" && r.DecodeTokPerS > 0 })
	fmt.Fprintln(w, "\n| SmolLM2 decoding | implementation | tokens/s then | tokens/s now | change | × transformers then | × transformers now | × llama.cpp then | × llama.cpp now |")
	fmt.Fprintln(w, "|---|---|---:|---:|---:|---:|---:|---:|---:|")
	for _, r := range cur.SmolLM2.Gen {
		if r.Error != "" || r.DecodeTokPerS <= 0 {
			continue
		}
		then, change, torchThen, llamaThen := "—", "new", "—", "—"
		if o, ok := oldByID[id(r)]; ok {
			then, change = fmt.Sprintf("%.1f", o.DecodeTokPerS), relChange(o.DecodeTokPerS, r.DecodeTokPerS)
			torchThen, llamaThen = formatRatio(o.DecodeVsTorch), formatRatio(o.DecodeVsLlama)
		}
		fmt.Fprintf(w, "| %s | %s | %s | %.1f | %s | %s | %s | %s | %s |\n", r.Backend, r.Impl, then, r.DecodeTokPerS, change,
			torchThen, formatRatio(r.DecodeVsTorch), llamaThen, formatRatio(r.DecodeVsLlama))
	}
	fmt.Fprintln(w, "\nchange: (now − then) / then; for tokens/s positive is faster. The ratios are each run's own (anchor timed in the same run).")
}

// formatRatio formats a ratio of a comparison table, "0.93×", or "—" when there is none (≤ 0).
func formatRatio(v float64) string {
	if v <= 0 {
		return "—"
	}
	return fmt.Sprintf("%.2f×", v)
}

// printMiniLMComparison prints old → cur for the minilm suite's rows measured in both runs (same
// backend and implementation; PyTorch's rows match across versions): the medians of a batch and
// each run's own ratio to PyTorch (< 1: faster). Nothing when the current run has no minilm rows.
func printMiniLMComparison(w io.Writer, old, cur *benchReport) {
	if len(cur.MiniLM) == 0 {
		return
	}
	id := func(r minilmResult) string {
		if r.Backend == "torch cpu" {
			return "torch" // the version is in Impl, and may differ
		}
		return r.Backend + "|" + r.Impl
	}
	oldByID := indexRows(old.MiniLM, id, func(r minilmResult) bool { return r.Error == "" && r.MedianMS > 0 })
	fmt.Fprintln(w, "\n| MiniLM embeddings | backend | batch | median then | median now | change | × PyTorch then | × PyTorch now |")
	fmt.Fprintln(w, "|---|---|---:|---:|---:|---:|---:|---:|")
	for _, r := range cur.MiniLM {
		if r.Error != "" || r.MedianMS <= 0 {
			continue
		}
		then, change, ratioThen := "—", "new", "—"
		if o, ok := oldByID[id(r)]; ok {
			then, change, ratioThen = FormatMS(o.MedianMS), relChange(o.MedianMS, r.MedianMS), formatRatio(o.VsTorch)
			if o.Batch != r.Batch {
				change = fmt.Sprintf("batch %d then", o.Batch)
			}
		}
		fmt.Fprintf(w, "| %s | %s | %d | %s | %s | %s | %s | %s |\n", r.Impl, r.Backend, r.Batch, then, FormatMS(r.MedianMS), change,
			ratioThen, formatRatio(r.VsTorch))
	}
	fmt.Fprintln(w, "\nchange: (now − then) / then of a batch's median; negative is faster. × PyTorch is each run's own ratio (PyTorch timed in the same run).")
}

// printWindowComparison prints old → cur for the modern suite's sliding-window rows measured in
// both runs (same backend, implementation, length and mask): the medians and each run's ratio to
// PyTorch's fastest row for the same length and mask (< 1: faster than PyTorch).
func printWindowComparison(w io.Writer, old, cur *benchReport) {
	if cur.Modern == nil || len(cur.Modern.Window) == 0 {
		return
	}
	var oldRows []windowResult
	if old.Modern != nil {
		oldRows = old.Modern.Window
	}
	id := func(r windowResult) string { return fmt.Sprintf("%s|%s|%d|%s", r.Backend, r.Impl, r.L, r.Mask) }
	oldByID := indexRows(oldRows, id, func(r windowResult) bool { return r.Error == "" && r.MedianMS > 0 })
	fmt.Fprintln(w, "\n| attention | L | mask | backend | median then | median now | change | × PyTorch's fastest then | × PyTorch's fastest now |")
	fmt.Fprintln(w, "|---|---:|---|---|---:|---:|---:|---:|---:|")
	for _, r := range cur.Modern.Window {
		if r.Error != "" || r.MedianMS <= 0 {
			continue
		}
		then, change, ratioThen, ratioNow := "—", "new", "—", formatRatio(windowVsTorch(cur.Modern.Window, r))
		if o, ok := oldByID[id(r)]; ok {
			then, change = FormatMS(o.MedianMS), relChange(o.MedianMS, r.MedianMS)
			ratioThen = formatRatio(windowVsTorch(oldRows, o))
		}
		fmt.Fprintf(w, "| %s | %d | %s | %s | %s | %s | %s | %s | %s |\n", r.Impl, r.L, r.Mask, r.Backend, then, FormatMS(r.MedianMS), change,
			ratioThen, ratioNow)
	}
	fmt.Fprintln(w, "\nchange: (now − then) / then; negative is faster.")
}

// windowVsTorch returns r's median over the fastest PyTorch row of the same length and mask in
// rows, 0 if there is none.
func windowVsTorch(rows []windowResult, r windowResult) float64 {
	best := 0.0
	for _, t := range rows {
		if t.Backend == "torch cpu" && t.Error == "" && t.L == r.L && t.Mask == r.Mask && t.MedianMS > 0 && (best == 0 || t.MedianMS < best) {
			best = t.MedianMS
		}
	}
	if best == 0 {
		return 0
	}
	return r.MedianMS / best
}

// indexRows maps id(r) to r for the rows of a previous run that keep accepts (the last one wins).
func indexRows[R any](rows []R, id func(R) string, keep func(R) bool) map[string]R {
	m := map[string]R{}
	for _, r := range rows {
		if keep(r) {
			m[id(r)] = r
		}
	}
	return m
}
