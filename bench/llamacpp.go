package bench

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"time"
)

// The smollm2 suite's second anchor: llama.cpp (llama-cpp-python) decoding the same GGUF file,
// with its weights kept quantised, on cfg.Threads threads (models/smollm2/bench_llama.py). It is
// optional: without llama-cpp-python the row is one note saying how to install it.

// llamaNotInstalled is the note of the llama.cpp row when no Python imports llama_cpp.
const llamaNotInstalled = "llama.cpp: llama-cpp-python not installed — scripts/setup.sh --only llama builds it (~10 min), or pass --llama-python PY"

// llamaBackend is the backend column of the llama.cpp row.
const llamaBackend = "llama.cpp cpu"

// findLlamaPython returns the Python to run llama.cpp with: flagValue,
// $MHALAB_LLAMA_VENV/bin/python, the venv of scripts/setup.sh --only llama, else fallback (the
// PyTorch Python, which may have llama-cpp-python too; "" if none).
func findLlamaPython(flagValue, fallback string) string {
	if flagValue != "" {
		return flagValue
	}
	var candidates []string
	if v := os.Getenv("MHALAB_LLAMA_VENV"); v != "" {
		candidates = append(candidates, filepath.Join(v, "bin", "python"))
	}
	if cache := userCacheDir(); cache != "" {
		candidates = append(candidates, filepath.Join(cache, "mhalab", "llama-venv", "bin", "python"))
	}
	for _, c := range candidates {
		if _, err := os.Stat(c); err == nil {
			return c
		}
	}
	return fallback
}

// userCacheDir is $XDG_CACHE_HOME, else ~/.cache ("" without a home), as scripts/setup.sh has it.
func userCacheDir() string {
	if c := os.Getenv("XDG_CACHE_HOME"); c != "" {
		return c
	}
	if home, err := os.UserHomeDir(); err == nil {
		return filepath.Join(home, ".cache")
	}
	return ""
}

// benchSmolLM2Llama runs models/smollm2/bench_llama.py with python on the GGUF file model; the
// result carries a note when llama-cpp-python is missing or fails, never an error.
func benchSmolLM2Llama(cfg Config, python, model string, prompt []int, s smollm2Settings) smollm2Result {
	r := smollm2Result{Backend: llamaBackend, Impl: "llama.cpp", PromptTokens: len(prompt), NewTokens: s.newTokens}
	script := findRepoFile(filepath.Join("models", "smollm2", "bench_llama.py"))
	switch {
	case python == "":
		r.Note = llamaNotInstalled
		return r
	case script == "":
		r.Note = "llama.cpp: models/smollm2/bench_llama.py not found (run from the repository)"
		return r
	}
	req, _ := json.Marshal(map[string]any{"model": model, "prompt_ids": prompt, "new_tokens": s.newTokens,
		"threads": cfg.Threads, "warmup": 1, "runs": s.runs, "budget_s": cfg.Budget.Seconds()})
	cmd := exec.Command(python, script)
	cmd.Stdin = bytes.NewReader(req)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	start := time.Now()
	if err := cmd.Run(); err != nil {
		r.Note = fmt.Sprintf("llama.cpp: %s %s failed after %s: %v: %s", python, script, time.Since(start).Round(time.Second), err, lastLines(errOut.String(), 3))
		return r
	}
	var ans struct {
		Missing    bool      `json:"missing"`
		Error      string    `json:"error"`
		Version    string    `json:"llama_cpp_python"`
		SystemInfo string    `json:"system_info"`
		Threads    int       `json:"threads"`
		PrefillMS  []float64 `json:"prefill_ms"`
		DecodeMS   []float64 `json:"decode_ms"`
		IDs        []int     `json:"ids"`
	}
	if err := json.Unmarshal(out.Bytes(), &ans); err != nil {
		r.Note = fmt.Sprintf("llama.cpp: unreadable answer from %s: %v", script, err)
		return r
	}
	switch {
	case ans.Missing:
		r.Note = llamaNotInstalled + " (" + python + " lacks it)"
		return r
	case ans.Error != "":
		r.Note = "llama.cpp: " + ans.Error
		return r
	case len(ans.PrefillMS) == 0 || len(ans.DecodeMS) != len(ans.PrefillMS) || len(ans.IDs) != s.newTokens:
		r.Note = fmt.Sprintf("llama.cpp: %s returned %d prefill and %d decode times and %d ids (want ≥ 1, as many, and %d)",
			script, len(ans.PrefillMS), len(ans.DecodeMS), len(ans.IDs), s.newTokens)
		return r
	}
	r.Impl = fmt.Sprintf("llama.cpp (llama-cpp-python %s, GGUF weights as stored), %d threads", ans.Version, ans.Threads)
	r.PrefillMS, r.DecodeMS, r.IDs = ans.PrefillMS, ans.DecodeMS, ans.IDs
	r.setRates()
	return r
}
