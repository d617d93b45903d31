package bench

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestSmolLM2RoundsAlternate: llama.cpp and every backend are timed in alternating rounds
// (llama.cpp, then each backend, s.rounds times), so that both sides' medians span the same
// stretch of a noisy machine; an anchor that fails (a note) is not run again.
func TestSmolLM2RoundsAlternate(t *testing.T) {
	var got []string
	round := 0 // advanced by the last backend of each round
	backends := []func(){
		func() { got = append(got, fmt.Sprint("xla:cpu", round)) },
		func() { got = append(got, fmt.Sprint("go", round)); round++ },
	}
	anchor := func() bool { got = append(got, fmt.Sprint("llama", round)); return true }
	timeInRounds(3, anchor, backends)
	want := []string{"llama0", "xla:cpu0", "go0", "llama1", "xla:cpu1", "go1", "llama2", "xla:cpu2", "go2"}
	if !slices.Equal(got, want) {
		t.Errorf("order %v, want %v", got, want)
	}
	got, round = nil, 0
	timeInRounds(2, func() bool { got = append(got, fmt.Sprint("llama", round)); return false }, backends[1:])
	if want := []string{"llama0", "go0", "go1"}; !slices.Equal(got, want) {
		t.Errorf("with an anchor that fails: order %v, want %v", got, want)
	}
}

// TestBenchSmolLM2LlamaPooled: the llama.cpp row pools the times of every round (each round is
// one run of bench_llama.py) and takes its rates from their medians; a round whose answer is bad
// stops the anchor with that round's note and no rate.
func TestBenchSmolLM2LlamaPooled(t *testing.T) {
	counter := filepath.Join(t.TempDir(), "calls")
	// Call n (1, 2, 3) answers decode times of 3n and 3n ms for 3 steps: medians 3, 6, 9 → pooled 6 ms.
	py := fakePython(t, `cat >/dev/null; n=$(($(cat `+counter+` 2>/dev/null || echo 0) + 1)); echo $n >`+counter+`
echo "{\"llama_cpp_python\": \"0.3.36\", \"threads\": 2, \"prefill_ms\": [$n, $n], \"decode_ms\": [$((3*n)), $((3*n))], \"ids\": [7, 8, 9, 10]}"`)
	var llama smollm2Result
	for range 3 {
		if !llama.pool(benchSmolLM2Llama(Config{Threads: 2, Budget: 1e9}, py, "/m.gguf", []int{1, 2, 3}, llamaTestSettings)) {
			t.Fatalf("a good answer stopped the anchor: %+v", llama)
		}
	}
	llama.setRates()
	if len(llama.DecodeMS) != 6 || llama.DecodeMSPerTok != 2 || llama.DecodeTokPerS != 500 || llama.Note != "" ||
		!strings.Contains(llama.Impl, "llama-cpp-python 0.3.36") || llama.Backend != llamaBackend {
		t.Errorf("pooled row %+v: want 6 decode times, median 6 ms over 3 steps = 2 ms/token, 500 tokens/s", llama)
	}
	if err := os.WriteFile(counter, []byte("bad"), 0o644); err != nil {
		t.Fatal(err)
	}
	bad := fakePython(t, "echo hello")
	if llama.pool(benchSmolLM2Llama(Config{Threads: 2, Budget: 1e9}, bad, "/m.gguf", []int{1, 2, 3}, llamaTestSettings)) ||
		!strings.Contains(llama.Note, "unreadable answer") {
		t.Errorf("after a bad round: %+v, want the anchor stopped with its note", llama)
	}
	llama.setRates()
	if llama.DecodeTokPerS != 0 {
		t.Errorf("a row with a note has a rate: %+v", llama)
	}
}
