package bench

import (
	"fmt"
	"strings"

	"github.com/dustin/go-humanize"
)

// evaluateGoals checks the goals against what this run measured (goals whose
// measurements are missing are left out).
func evaluateGoals(rep *benchReport) []goalResult {
	var goals []goalResult
	find := func(key, backend string, flash bool) *mhaResult {
		for i, r := range rep.MHA {
			if r.key() == key && r.Backend == backend && r.Flash == flash && r.Error == "" && !r.isTorch() {
				return &rep.MHA[i]
			}
		}
		return nil
	}
	best := func(key, backend string) *mhaResult {
		a, b := find(key, backend, false), find(key, backend, true)
		if a == nil || (b != nil && b.MedianMS < a.MedianMS) {
			return b
		}
		return a
	}
	for _, g := range []struct {
		backend string
		limit   float64
		keys    []string
	}{
		{"xla:cpu", 0.8, []string{"seed003", "seed003/causal", "long", "long/causal", "llm", "llm/causal"}},
		// issue 29, goal 2: the pure-Go backend (with fastgo) as fast as MKL-backed PyTorch
		{"go", 1.0, []string{"seed003", "seed003/causal", "long", "long/causal", "llm", "llm/causal"}},
	} {
		for _, key := range g.keys {
			r := best(key, g.backend)
			if r == nil {
				continue
			}
			if impl, t := torchReference(rep, *r); t > 0 {
				ratio := r.MedianMS / t
				need := peakNeed(rep.Machine, r.GFLOPS*r.MedianMS/(g.limit*t)) // the same FLOPs in limit·t
				goals = append(goals, goalResult{
					Goal:     fmt.Sprintf("%s %s ≤ %.1f× PyTorch (the faster of plain and flash; the fastest PyTorch measured)", g.backend, key, g.limit),
					Measured: fmt.Sprintf("%s× (%s %s vs %s %s%s)", beside(ratio, g.limit, 2), r.Impl, FormatMS(r.MedianMS), strings.TrimSuffix(impl, " nn.MHA"), FormatMS(t), need),
					Met:      ratio <= g.limit})
			}
		}
	}
	if r := best("seed003", "xla:cpu"); r != nil && r.B == 32 && r.L == 128 && r.E == 512 {
		goals = append(goals, goalResult{Goal: "xla:cpu seed003 ≥ 250 GFLOP/s",
			Measured: fmt.Sprintf("%s GFLOP/s (%s %s%s)", beside(r.GFLOPS, 250, 0), r.Impl, FormatMS(r.MedianMS), peakNeed(rep.Machine, 250)), Met: r.GFLOPS >= 250})
	}
	for _, spec := range []string{"xla:cpu"} {
		for _, key := range []string{"long", "long/causal"} {
			plain, flash := find(key, spec, false), find(key, spec, true)
			if plain != nil && flash != nil {
				ratio := flash.MedianMS / plain.MedianMS
				goals = append(goals, goalResult{Goal: fmt.Sprintf("%s %s: flash ≤ 1.5× plain", spec, key),
					Measured: fmt.Sprintf("%s× (%s vs %s)", beside(ratio, 1.5, 2), FormatMS(flash.MedianMS), FormatMS(plain.MedianMS)), Met: ratio <= 1.5})
			}
		}
	}
	for _, spec := range []string{"xla:cpu"} {
		for _, key := range []string{"seed003", "seed003/causal", "long", "long/causal", "llm", "llm/causal"} {
			plain, flash := find(key, spec, false), find(key, spec, true)
			if plain == nil || flash == nil {
				continue
			}
			auto, other := plain, flash
			if flash.AutoChoice {
				auto, other = flash, plain
			}
			goals = append(goals, goalResult{Goal: fmt.Sprintf("%s %s: Auto (the default) chooses the faster of plain and flash", spec, key),
				Measured: fmt.Sprintf("%s %s vs %s %s", strings.TrimPrefix(auto.Impl, "mhalib "), FormatMS(auto.MedianMS),
					strings.TrimPrefix(other.Impl, "mhalib "), FormatMS(other.MedianMS)), Met: auto.MedianMS <= other.MedianMS})
		}
	}
	for _, m := range rep.Memory {
		if m.Kind == "flash" && m.L == 32768 && m.Backend == "xla:cpu" && m.Error == "" {
			goals = append(goals, goalResult{Goal: "xla:cpu flash forward at L = 32768, B1 h8 dk64 within 2 GiB peak RSS",
				Measured: humanize.IBytes(uint64(m.PeakRSSKiB) * 1024), Met: m.PeakRSSKiB*1024 <= 2<<30})
		}
	}
	goals = append(goals, blockGradGoals(rep.BlockGrad)...)
	for _, d := range rep.Decode {
		if d.Error == "" && d.Context >= 2048 {
			goals = append(goals, goalResult{Goal: d.Backend + " decoding with KV cache ≥ 10× recompute (L 2048, D 512, h 8)",
				Measured: fmt.Sprintf("%s (%.1f vs %.2f tokens/s)", FormatTimes(d.Speedup), d.CachedTokensPerS, d.RecomputeTokPerS), Met: d.Speedup >= 10})
		}
	}
	var torchGen *smollm2Result
	for i, r := range rep.SmolLM2.Gen {
		if r.Backend == "torch cpu" && r.DecodeTokPerS > 0 {
			torchGen = &rep.SmolLM2.Gen[i]
		}
	}
	for _, r := range rep.SmolLM2.Gen {
		if r.Backend == "xla:cpu" && r.Error == "" && torchGen != nil {
			goals = append(goals, goalResult{Goal: "xla:cpu decodes SmolLM2-135M-Instruct at least as fast as transformers on PyTorch",
				Measured: fmt.Sprintf("%.2f vs %.2f tokens/s (%s×)", r.DecodeTokPerS, torchGen.DecodeTokPerS, beside(r.DecodeVsTorch, 1, 2)), Met: r.DecodeVsTorch >= 1})
		}
	}
	goals = append(goals, llamaGoal(rep.SmolLM2.Gen)...)
	goals = append(goals, modernDecodeGoals(rep)...) // issue 29, goal 3 (goals_decode.go)
	goals = append(goals, modernWindowGoals(rep)...)
	for _, r := range rep.Explore { // issue 27: the live explorer on xla:cpu
		if r.Backend == "xla:cpu" && r.Error == "" && r.Note == "" {
			goals = append(goals, goalResult{Goal: fmt.Sprintf("explore %s: ≤ %s per %s", r.Model, FormatMS(r.LimitMS), r.What),
				Measured: fmt.Sprintf("median %s, max %s over %d (load %s)", FormatMS(r.MedianMS), FormatMS(r.MaxMS), len(r.TimesMS), r.Load),
				Met:      r.MedianMS <= r.LimitMS})
		}
	}
	return goals
}

// llamaGoal is issue 29's goal 4 — SmolLM2 decoding at least as fast as llama.cpp on the same
// GGUF, on at least one backend — measured by the fastest backend; none without a llama.cpp row.
func llamaGoal(gen []smollm2Result) []goalResult {
	var llama, best *smollm2Result
	for i, r := range gen {
		switch {
		case r.Backend == llamaBackend && r.DecodeTokPerS > 0:
			llama = &gen[i]
		case r.Error == "" && r.DecodeVsLlama > 0 && (best == nil || r.DecodeVsLlama > best.DecodeVsLlama):
			best = &gen[i]
		}
	}
	if llama == nil || best == nil {
		return nil
	}
	return []goalResult{{Goal: "SmolLM2-135M-Instruct decoding ≥ llama.cpp's tokens/s on the same GGUF, on at least one backend",
		Measured: fmt.Sprintf("%s %.2f vs %.2f tokens/s (%s×)", best.Backend, best.DecodeTokPerS, llama.DecodeTokPerS, beside(best.DecodeVsLlama, 1, 2)),
		Met:      best.DecodeVsLlama >= 1}}
}
