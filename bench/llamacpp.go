package bench

import (
	"fmt"
	"os"
)

// The smollm2 suite's second anchor: llama.cpp (llama-cpp-python) decoding the same GGUF file,
// with its weights kept quantised, on cfg.Threads threads (models/smollm2/bench_llama.py). It is
// optional: without llama-cpp-python the row is one note saying how to install it.
//
// llama.cpp built as scripts/setup.sh builds it uses OpenMP, whose threads spin while they wait
// by default: on a shared machine a spinning thread is descheduled while its partner needs it,
// and decoding slowed ~90× (15 tokens: 46 s with the default, 0.5 s with OMP_WAIT_POLICY=PASSIVE,
// at load ~21 on 2 cores). On a quiet machine the opposite holds: PASSIVE made llama.cpp ~3×
// slower (35.6 against 104.6 tokens/s with ACTIVE, same run conditions), so an anchor run with
// PASSIVE by default would flatter mhalab. The bench therefore leaves OpenMP's default alone and
// passes OMP_WAIT_POLICY through only when the environment sets it (set PASSIVE on a loaded
// machine); the row's implementation names the policy.

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
	script, note := anchorScript("llama.cpp", python, "bench_llama.py", llamaNotInstalled)
	if note != "" {
		r.Note = note
		return r
	}
	var ans struct {
		smollm2Answer
		Missing bool   `json:"missing"`
		Version string `json:"llama_cpp_python"`
	}
	policy := os.Getenv("OMP_WAIT_POLICY")
	var env []string
	if policy != "" {
		env = append(env, "OMP_WAIT_POLICY="+policy)
	} else {
		policy = "unset (OpenMP's default)"
	}
	r.Note = runAnchor("llama.cpp", python, script, smollm2Request(cfg, model, prompt, s), &ans, &ans.smollm2Answer, &r, env...)
	switch {
	case ans.Missing:
		r.Note = llamaNotInstalled + " (" + python + " lacks it)"
		return r
	case r.Note != "":
		return r
	}
	r.Impl = fmt.Sprintf("llama.cpp (llama-cpp-python %s, GGUF weights as stored), %d threads, OMP_WAIT_POLICY=%s", ans.Version, ans.Threads, policy)
	r.setRates()
	return r
}
