package bench

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"syscall"
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

// A llama.cpp built with -march=native on an Intel Xeon with AMX runs its matrix products in
// ggml's AMX backend, an "extra buffer type"; on the 2-core Xeon of 2026-12-03 (a VM, AMX_INT8 in
// llama_print_system_info) its first product killed the process (SIGSEGV in
// ggml_backend_amx_mul_mat). So when the script dies of a signal, the anchor runs it again with
// extra buffer types off (llama_model_params.use_extra_bufts: no AMX, no weight repacking; for
// this model's Q4_1 and Q8_0 weights llama.cpp's AVX-512 kernels), for that round and the rest,
// and the row says so.

// llamaAnchor runs the llama.cpp anchor round after round; crash, once set, is why the extra
// buffer types are off.
type llamaAnchor struct {
	crash string
}

// benchSmolLM2Llama runs models/smollm2/bench_llama.py with python on the GGUF file model; the
// result carries a note when llama-cpp-python is missing or fails, never an error.
func benchSmolLM2Llama(cfg Config, python, model string, prompt []int, s smollm2Settings) smollm2Result {
	return (&llamaAnchor{}).run(cfg, python, model, prompt, s)
}

// run is benchSmolLM2Llama, retrying once without extra buffer types when the script dies of a
// signal, and keeping them off in later rounds.
func (a *llamaAnchor) run(cfg Config, python, model string, prompt []int, s smollm2Settings) smollm2Result {
	if a.crash == "" {
		r, err := a.once(cfg, python, model, prompt, s, true)
		var exit *exec.ExitError
		if !errors.As(err, &exit) {
			return r
		}
		ws, ok := exit.Sys().(syscall.WaitStatus)
		if !ok || !ws.Signaled() {
			return r
		}
		a.crash = ws.Signal().String()
	}
	r, _ := a.once(cfg, python, model, prompt, s, false)
	if r.Note == "" {
		r.Impl += fmt.Sprintf("; extra buffer types off (AMX, weight repacking): with them llama.cpp died of %s", a.crash)
	}
	return r
}

// once runs bench_llama.py once, with or without extra buffer types; err is the script's failure
// (also in the row's note).
func (a *llamaAnchor) once(cfg Config, python, model string, prompt []int, s smollm2Settings, extraBufts bool) (smollm2Result, error) {
	r := smollm2Result{Backend: llamaBackend, Impl: "llama.cpp", PromptTokens: len(prompt), NewTokens: s.newTokens}
	script, note := anchorScript("llama.cpp", python, "bench_llama.py", llamaNotInstalled)
	if note != "" {
		r.Note = note
		return r, nil
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
	req := smollm2Request(cfg, model, prompt, s)
	req["extra_bufts"] = extraBufts
	var err error
	r.Note, err = runAnchor("llama.cpp", python, script, req, &ans, &ans.smollm2Answer, &r, env...)
	switch {
	case ans.Missing:
		r.Note = llamaNotInstalled + " (" + python + " lacks it)"
		return r, nil
	case r.Note != "":
		return r, err
	}
	r.Impl = fmt.Sprintf("llama.cpp (llama-cpp-python %s, GGUF weights as stored), %d threads, OMP_WAIT_POLICY=%s", ans.Version, ans.Threads, policy)
	r.setRates()
	return r, nil
}
