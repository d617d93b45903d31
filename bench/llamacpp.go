package bench

import (
	"fmt"
	"path/filepath"
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
	if p := venvPython("MHALAB_LLAMA_VENV", "llama-venv"); p != "" {
		return p
	}
	return fallback
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
	var ans struct {
		smollm2Answer
		Missing bool   `json:"missing"`
		Version string `json:"llama_cpp_python"`
	}
	r.Note = runAnchor("llama.cpp", python, script, smollm2Request(cfg, model, prompt, s), &ans, &ans.smollm2Answer, &r)
	switch {
	case ans.Missing:
		r.Note = llamaNotInstalled + " (" + python + " lacks it)"
		return r
	case r.Note != "":
		return r
	}
	r.Impl = fmt.Sprintf("llama.cpp (llama-cpp-python %s, GGUF weights as stored), %d threads", ans.Version, ans.Threads)
	r.setRates()
	return r
}
