package bench

import (
	"fmt"
	"io"
)

// printDecodeComparison prints, after printComparison, old → cur for the modern suite's
// decoding rows measured in both runs (same backend, model and number of key/value heads):
// tokens/s then and now, and each run's own ratio to PyTorch's tokens/s for the same model
// (× PyTorch > 1: faster than PyTorch). Nothing when neither run decoded.
func printDecodeComparison(w io.Writer, old, cur *benchReport) {
	if cur.Modern == nil || len(cur.Modern.Decode) == 0 {
		return
	}
	var oldRows []gqaDecodeResult
	if old.Modern != nil {
		oldRows = old.Modern.Decode
	}
	id := func(r gqaDecodeResult) string { return fmt.Sprintf("%s|%s|%d", r.Backend, r.Model, r.KVHeads) }
	oldByID := indexRows(oldRows, id, func(r gqaDecodeResult) bool { return r.Error == "" })
	fmt.Fprintln(w, "\n| decoding | KV heads | backend | tokens/s then | tokens/s now | change | × PyTorch then | × PyTorch now | change |")
	fmt.Fprintln(w, "|---|---:|---|---:|---:|---:|---:|---:|---:|")
	for _, r := range cur.Modern.Decode {
		if r.Error != "" {
			continue
		}
		then, change, ratioThen, ratioNow, ratioChange := "—", "new", "—", "—", "—"
		o, ok := oldByID[id(r)]
		if ok {
			then, change = fmt.Sprintf("%.1f", o.TokensPerS), relChange(o.TokensPerS, r.TokensPerS)
		}
		now := decodeVsTorch(cur.Modern.Decode, r)
		ratioNow = formatRatio(now)
		if ok {
			if v := decodeVsTorch(oldRows, o); v > 0 {
				ratioThen = formatRatio(v)
				if now > 0 {
					ratioChange = relChange(v, now)
				}
			}
		}
		fmt.Fprintf(w, "| %s | %d | %s | %s | %.1f | %s | %s | %s | %s |\n", r.Model, r.KVHeads, r.Backend, then, r.TokensPerS, change,
			ratioThen, ratioNow, ratioChange)
	}
	fmt.Fprintln(w, "\nchange: (now − then) / then; for tokens/s positive is faster. × PyTorch: tokens/s over PyTorch's tokens/s in the same run (1 for PyTorch's own rows).")
}

// decodeVsTorch returns r's tokens/s over the PyTorch row's of the same model and number of
// key/value heads in rows, 0 if there is none.
func decodeVsTorch(rows []gqaDecodeResult, r gqaDecodeResult) float64 {
	for _, t := range rows {
		if t.Backend == "torch cpu" && t.Error == "" && t.KVHeads == r.KVHeads && t.Model == r.Model && t.TokensPerS > 0 {
			return r.TokensPerS / t.TokensPerS
		}
	}
	return 0
}
