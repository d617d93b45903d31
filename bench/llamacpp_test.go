package bench

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mhalab/mhalab/models/smollm2"
)

// fakePython writes an executable shell script named python into a temporary folder and
// returns its path; body runs with the script's arguments ($1: bench_llama.py).
func fakePython(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "python")
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

var llamaTestSettings = smollm2Settings{newTokens: 4, runs: 2}

// TestBenchSmolLM2LlamaMissing: without llama-cpp-python the llama.cpp row is one note that says
// how to install it — with no Python, with a real Python that lacks the module (python3 -S: no
// site-packages), with a Python that fails, and with an answer that is not JSON — never an error.
func TestBenchSmolLM2LlamaMissing(t *testing.T) {
	cfg := Config{Threads: 2, Budget: 1e9}
	prompt := []int{1, 2, 3}
	cases := map[string]struct {
		python string
		want   string
	}{
		"no python":    {"", "llama-cpp-python not installed — scripts/setup.sh --only llama builds it"},
		"python fails": {fakePython(t, "echo boom >&2; exit 3"), "failed after"},
		"not JSON":     {fakePython(t, "echo hello"), "unreadable answer"},
		"too few ids": {fakePython(t, `cat >/dev/null; echo '{"prefill_ms": [1], "decode_ms": [2], "ids": [5]}'`),
			"returned 1 prefill and 1 decode times and 1 ids"},
	}
	if py, err := exec.LookPath("python3"); err == nil {
		cases["python lacks llama_cpp"] = struct{ python, want string }{
			fakePython(t, "exec "+py+` -S "$@"`), "llama-cpp-python not installed — scripts/setup.sh --only llama builds it (~10 min), or pass --llama-python PY ("}
	}
	for name, c := range cases {
		r := benchSmolLM2Llama(cfg, c.python, "/nonexistent/model.gguf", prompt, llamaTestSettings)
		if !strings.Contains(r.Note, c.want) || r.Error != "" || r.DecodeTokPerS != 0 {
			t.Errorf("%s: row %+v: want a note containing %q, no error, no rate", name, r, c.want)
		}
		var out bytes.Buffer
		printSmolLM2(&out, smollm2Report{Gen: []smollm2Result{r}})
		if n := strings.Count(out.String(), r.Note); n != 1 {
			t.Errorf("%s: the report shows the note %d times, want once:\n%s", name, n, out.String())
		}
	}
}

// TestBenchSmolLM2LlamaPresent: with a Python that answers (a fake standing in for
// llama-cpp-python), the request carries the prompt, token count and threads, OMP_WAIT_POLICY is
// left as OpenMP's default (PASSIVE on a quiet machine made llama.cpp ~3× slower); the row gets its
// rates from the median times; the backends' rows their ratio to it; and the goal row says
// whether the fastest backend reaches llama.cpp.
func TestBenchSmolLM2LlamaPresent(t *testing.T) {
	reqFile, policyFile := filepath.Join(t.TempDir(), "request.json"), filepath.Join(t.TempDir(), "policy")
	t.Setenv("OMP_WAIT_POLICY", "") // unset: the bench must not ask for PASSIVE (or anything)
	// prefill: 3 tokens in 10 ms (median of 10, 10, 30) → 300 tokens/s; decode: 3 steps in 15 ms → 200 tokens/s.
	py := fakePython(t, "cat >"+reqFile+`; echo "$OMP_WAIT_POLICY" >`+policyFile+`; echo '{"llama_cpp_python": "0.3.36", "threads": 2, "prefill_ms": [10, 10, 30], "decode_ms": [15, 15, 45], "ids": [7, 8, 9, 10]}'`)
	r := benchSmolLM2Llama(Config{Threads: 2, Budget: 1e9}, py, "/m.gguf", []int{1, 2, 3}, llamaTestSettings)
	if r.Note != "" || r.Backend != llamaBackend || r.PrefillTokPerS != 300 || r.DecodeTokPerS != 200 {
		t.Fatalf("row %+v: want no note, prefill 300 and decode 200 tokens/s", r)
	}
	var req struct {
		Model     string `json:"model"`
		PromptIDs []int  `json:"prompt_ids"`
		NewTokens int    `json:"new_tokens"`
		Threads   int    `json:"threads"`
		Runs      int    `json:"runs"`
	}
	data, err := os.ReadFile(reqFile)
	if err == nil {
		err = json.Unmarshal(data, &req)
	}
	if err != nil || req.Model != "/m.gguf" || len(req.PromptIDs) != 3 || req.NewTokens != 4 || req.Threads != 2 || req.Runs != 2 {
		t.Errorf("request %s (%v): want model /m.gguf, 3 prompt ids, 4 new tokens, 2 threads, 2 runs", data, err)
	}
	if p, err := os.ReadFile(policyFile); err != nil || string(p) != "\n" || !strings.Contains(r.Impl, "OMP_WAIT_POLICY=unset (OpenMP's default)") {
		t.Errorf("OMP_WAIT_POLICY seen by the script %q (%v), implementation %q: want it unset, and the row saying so", p, err, r.Impl)
	}
	t.Setenv("OMP_WAIT_POLICY", "PASSIVE") // set by the user (a loaded machine): passed through
	if r := benchSmolLM2Llama(Config{Threads: 2, Budget: 1e9}, py, "/m.gguf", []int{1, 2, 3}, llamaTestSettings); r.Note != "" {
		t.Fatalf("row %+v: want no note", r)
	} else if p, err := os.ReadFile(policyFile); err != nil || string(p) != "PASSIVE\n" || !strings.Contains(r.Impl, "OMP_WAIT_POLICY=PASSIVE") {
		t.Errorf("OMP_WAIT_POLICY seen by the script %q (%v), implementation %q: want PASSIVE in both", p, err, r.Impl)
	}
	torch := smollm2Result{Backend: "torch cpu", DecodeTokPerS: 25, IDs: []int{7, 8, 0, 0}}
	r.compareWith(torch, smollm2Result{})
	slow := smollm2Result{Backend: "go", DecodeTokPerS: 50, IDs: []int{7, 8, 9, 0}}
	fast := smollm2Result{Backend: "xla:cpu", DecodeTokPerS: 100, IDs: []int{7, 0, 0, 0}}
	slow.compareWith(torch, r)
	fast.compareWith(torch, r)
	if slow.DecodeVsLlama != 0.25 || fast.DecodeVsLlama != 0.5 || fast.DecodeVsTorch != 4 || slow.SameAsTorch != 2 || r.SameAsTorch != 2 {
		t.Errorf("ratios: go %+v, xla:cpu %+v, llama %+v", slow, fast, r)
	}
	var out bytes.Buffer
	printSmolLM2(&out, smollm2Report{Gen: []smollm2Result{torch, r, slow, fast}})
	for _, want := range []string{"| decode × llama.cpp |", "| xla:cpu | 0 | 0 | — | 0.00 ms | 0.0 | 0.00 ms | 100.00 | 4.00 | 0.50 | 1/0 |"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, out.String())
		}
	}
	goals := llamaGoal([]smollm2Result{torch, r, slow, fast})
	if len(goals) != 1 || goals[0].Met || !strings.Contains(goals[0].Measured, "xla:cpu 100.00 vs 200.00 tokens/s (0.50×)") {
		t.Errorf("goals %+v: want one, missed, measured by xla:cpu at 0.50×", goals)
	}
	if g := llamaGoal([]smollm2Result{torch, slow}); g != nil {
		t.Errorf("goals without a llama.cpp row: %+v, want none", g)
	}
}

// TestBenchSmolLM2LlamaReal runs models/smollm2/bench_llama.py with llama-cpp-python where it is
// installed (scripts/setup.sh --only llama; CI does not install it, so the test skips there too).
func TestBenchSmolLM2LlamaReal(t *testing.T) {
	path, err := smollm2.CheckDefault()
	if err != nil {
		t.Skipf("SmolLM2-135M-Instruct not installed: %v", err)
	}
	py := findLlamaPython("", findPython(""))
	if py == "" || exec.Command(py, "-c", "import llama_cpp").Run() != nil {
		t.Skip("llama-cpp-python not installed (scripts/setup.sh --only llama)")
	}
	m, err := smollm2.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	prompt := m.Tokenizer.Encode(smollm2Prompt)[:smollm2QuickTokens]
	r := benchSmolLM2Llama(Config{Threads: 2, Budget: 1e9}, py, path, prompt, llamaTestSettings)
	if r.Note != "" || r.DecodeTokPerS <= 0 || r.PrefillTokPerS <= 0 || len(r.IDs) != 4 || !strings.Contains(r.Impl, "llama-cpp-python 0.3.") {
		t.Fatalf("row %+v: want rates, 4 ids and the version", r)
	}
	t.Logf("%s: prefill %.0f, decode %.0f tokens/s; ids %v", r.Impl, r.PrefillTokPerS, r.DecodeTokPerS, r.IDs)
}

// TestBenchSmolLM2LlamaCrash: when llama.cpp dies of a signal with its extra buffer types (the
// AMX kernels that crashed on an Intel Xeon), the anchor runs again without them, keeps them off
// in the later rounds (one crash in all), and the row says why; a script that fails by an exit
// status is not retried.
func TestBenchSmolLM2LlamaCrash(t *testing.T) {
	calls := filepath.Join(t.TempDir(), "calls")
	py := fakePython(t, `req=$(cat); echo "$req" >>`+calls+`
case "$req" in *'"extra_bufts":true'*) kill -SEGV $$;; esac
echo '{"llama_cpp_python": "0.3.36", "threads": 2, "extra_bufts": false, "prefill_ms": [10], "decode_ms": [15], "ids": [7, 8, 9, 10]}'`)
	a := &llamaAnchor{}
	var pooled smollm2Result
	for round := range 2 {
		r := a.run(Config{Threads: 2, Budget: 1e9}, py, "/m.gguf", []int{1, 2, 3}, llamaTestSettings)
		if r.Note != "" || r.DecodeTokPerS != 200 || !strings.Contains(r.Impl, "extra buffer types off (AMX, weight repacking): with them llama.cpp died of segmentation fault") {
			t.Fatalf("round %d: row %+v: want the times of the run without extra buffer types, and the crash named", round, r)
		}
		if !pooled.pool(r) {
			t.Fatalf("round %d: not pooled", round)
		}
	}
	data, _ := os.ReadFile(calls)
	if got := strings.Count(string(data), `"extra_bufts":true`); got != 1 || strings.Count(string(data), `"extra_bufts":false`) != 2 {
		t.Errorf("requests:\n%s\nwant one with extra buffer types (the crash), then two without", data)
	}
	fails := fakePython(t, "cat >/dev/null; echo boom >&2; exit 3")
	if r := (&llamaAnchor{}).run(Config{Threads: 2, Budget: 1e9}, fails, "/m.gguf", []int{1, 2, 3}, llamaTestSettings); !strings.Contains(r.Note, "exit status 3") || strings.Contains(r.Impl, "extra buffer types off") {
		t.Errorf("exit status 3: row %+v: want the failure as the note, no retry", r)
	}
}
