package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gomlx/gomlx/pkg/core/tensors"
	"github.com/mhalab/mhalab/torchio"
)

// forwardFuzzFlags are the optional flags FuzzForward switches on, one bit each.
var forwardFuzzFlags = []string{"--batch-first", "--add-zero-attn", "--need-weights", "--average-attn-weights", "--is-causal"}

// forwardFuzzArgs builds the command line of one fuzz case: bits selects optional flags (bit 5
// leaves --num-heads out, bit 6 adds a stray argument).
func forwardFuzzArgs(weights, inputs, out string, bits uint8, heads int8) []string {
	args := []string{"forward", "--weights", weights, "--inputs", inputs, "--out", out, "--backend", "go", "--max-memory", "64MiB"}
	if bits&(1<<5) == 0 {
		args = append(args, "--num-heads", fmt.Sprint(heads))
	}
	for i, f := range forwardFuzzFlags {
		if bits&(1<<i) != 0 {
			args = append(args, f)
		}
	}
	if bits&(1<<6) != 0 {
		args = append(args, "stray")
	}
	return args
}

// checkForwardOutcome fails t unless one run of mhalab forward ended well: exit 0 with an
// output file holding attn_output, or exit 1 or 2 with one line on stderr (two for a usage
// error: the line and the pointer to -h), never a recovered panic.
func checkForwardOutcome(t *testing.T, args []string, code int, stdout, stderr, out string) {
	t.Helper()
	for _, bad := range []string{"internal error", "panic", "goroutine "} {
		if strings.Contains(stderr, bad) {
			t.Fatalf("mhalab %s: exit %d, stderr contains %q:\n%s", strings.Join(args, " "), code, bad, stderr)
		}
	}
	// The line naming the backend is information, not part of an error.
	var kept []string
	for _, l := range strings.Split(strings.TrimRight(stderr, "\n"), "\n") {
		if !strings.HasPrefix(l, "mhalab: backend ") {
			kept = append(kept, l)
		}
	}
	stderr = strings.Join(kept, "\n")
	lines := len(kept)
	switch code {
	case 0:
		f, err := torchio.ReadFile(out)
		if err != nil {
			t.Fatalf("mhalab %s: exit 0 but the output is unreadable: %v", strings.Join(args, " "), err)
		}
		if f.Tensors["attn_output"] == nil {
			t.Fatalf("mhalab %s: exit 0 but no attn_output in %v", strings.Join(args, " "), f.Names)
		}
	case 1:
		if stderr == "" || lines != 1 {
			t.Fatalf("mhalab %s: exit 1 with %d lines on stderr, want 1:\n%s", strings.Join(args, " "), lines, stderr)
		}
	case 2:
		if stderr == "" || lines != 2 || !strings.Contains(stderr, `Run "mhalab forward -h" for usage.`) {
			t.Fatalf("mhalab %s: exit 2 with stderr:\n%s\nwant one line and the pointer to -h", strings.Join(args, " "), stderr)
		}
	default:
		t.Fatalf("mhalab %s: exit %d, want 0, 1 or 2; stderr:\n%s", strings.Join(args, " "), code, stderr)
	}
}

// FuzzForward runs `mhalab forward` in-process on fuzzed weights and inputs files and flag
// combinations, on the pure-Go backend. Seeds: the committed forward fixtures of parity/testdata,
// and the corpus in testdata/fuzz/FuzzForward (crashers found are kept there as regression
// cases; plain `go test` runs them all). Run it with
//
//	go test ./cmd/mhalab -run '^$' -fuzz FuzzForward -fuzztime 10m
func FuzzForward(f *testing.F) {
	fixtures, err := filepath.Glob(filepath.Join("..", "..", "parity", "testdata", "*.inputs.safetensors"))
	if err != nil || len(fixtures) == 0 {
		f.Fatalf("no forward fixtures in parity/testdata (%v)", err)
	}
	for i, in := range fixtures {
		w := strings.TrimSuffix(in, ".inputs.safetensors") + ".weights.safetensors"
		wData, err1 := os.ReadFile(w)
		inData, err2 := os.ReadFile(in)
		if err1 != nil || err2 != nil {
			f.Fatal(err1, err2)
		}
		f.Add(wData, inData, uint8(i%32), int8(2))
	}
	f.Fuzz(func(t *testing.T, weights, inputs []byte, bits uint8, heads int8) {
		dir := t.TempDir()
		wPath, inPath, out := filepath.Join(dir, "w.safetensors"), filepath.Join(dir, "in.safetensors"), filepath.Join(dir, "out.safetensors")
		if err := os.WriteFile(wPath, weights, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(inPath, inputs, 0o644); err != nil {
			t.Fatal(err)
		}
		args := forwardFuzzArgs(wPath, inPath, out, bits, heads)
		var stdout, stderr bytes.Buffer
		code := run(args, &stdout, &stderr)
		checkForwardOutcome(t, args, code, stdout.String(), stderr.String(), out)
	})
}

// fuzzTensor makes a small tensor for FuzzForwardShapes: rank and dims from spec (consumed
// from the front), dtype from kind. A rank of 0 means no tensor.
func fuzzTensor(spec *[]byte, kind uint8) *tensors.Tensor {
	next := func() int {
		if len(*spec) == 0 {
			return 0
		}
		b := (*spec)[0]
		*spec = (*spec)[1:]
		return int(b)
	}
	rank := next() % 5
	if rank == 0 {
		return nil
	}
	dims := make([]int, rank)
	n := 1
	for i := range dims {
		dims[i] = next() % 10 // 0 … 9: empty axes included
		n *= dims[i]
	}
	switch kind % 5 {
	case 0, 1:
		data := make([]float32, n)
		for i := range data {
			data[i] = float32(i%7) - 3
		}
		return tensors.FromFlatDataAndDimensions(data, dims...)
	case 2:
		data := make([]bool, n)
		for i := range data {
			data[i] = i%3 == 0
		}
		return tensors.FromFlatDataAndDimensions(data, dims...)
	case 3:
		return tensors.FromFlatDataAndDimensions(make([]uint8, n), dims...)
	}
	return tensors.FromFlatDataAndDimensions(make([]float64, n), dims...)
}

// FuzzForwardShapes runs `mhalab forward` on well-formed safetensors inputs of fuzzed ranks,
// sizes and dtypes (query, key, value, attn_mask, key_padding_mask; sizes 0 … 9) with the
// weights of a committed fixture and fuzzed flags: it explores the shape checks and the graph,
// which FuzzForward, mutating file bytes, rarely reaches. Run it with
//
//	go test ./cmd/mhalab -run '^$' -fuzz FuzzForwardShapes -fuzztime 5m
func FuzzForwardShapes(f *testing.F) {
	// mha_everything: E 8, kdim 6, vdim 7, bias_k/v; seq-first [L, B, E], Lq 3, Lk 5, B 2.
	f.Add(uint8(0), []byte{3, 3, 2, 8, 3, 5, 2, 6, 3, 5, 2, 7, 2, 3, 5, 2, 2, 5}, uint8(0), uint8(0), int8(2))
	f.Add(uint8(0), []byte{2, 3, 8, 2, 5, 6, 2, 5, 7, 2, 3, 5, 1, 5}, uint8(0b11_00_00_00), uint8(0b10110), int8(2))
	f.Add(uint8(1), []byte{3, 2, 4, 8, 3, 2, 4, 8, 3, 2, 4, 8, 3, 4, 4, 4}, uint8(0b10_00_00_00), uint8(0b11101), int8(4))
	fixtures := []string{"mha_everything", "mha_self", "mha_kdim_vdim", "mha_nobias"}
	f.Fuzz(func(t *testing.T, fixture uint8, spec []byte, kinds uint8, bits uint8, heads int8) {
		dir := t.TempDir()
		weights := filepath.Join("..", "..", "parity", "testdata", fixtures[int(fixture)%len(fixtures)]+".weights.safetensors")
		ts := map[string]*tensors.Tensor{}
		// kinds: bit 0 float64 inputs; bits 4-5 attn_mask dtype, bits 6-7 key_padding_mask dtype.
		inputKind := uint8(0)
		if kinds&1 != 0 {
			inputKind = 4
		}
		for i, name := range []string{"query", "key", "value", "attn_mask", "key_padding_mask"} {
			kind := inputKind
			if i == 3 {
				kind = kinds >> 4 & 3
			} else if i == 4 {
				kind = kinds >> 6 & 3
			}
			if tt := fuzzTensor(&spec, kind); tt != nil {
				ts[name] = tt
			}
		}
		inputs, out := filepath.Join(dir, "in.safetensors"), filepath.Join(dir, "out.safetensors")
		if err := torchio.WriteFile(inputs, ts, nil); err != nil {
			t.Fatal(err)
		}
		args := forwardFuzzArgs(weights, inputs, out, bits&0b1_0011111, heads) // --num-heads always given
		var stdout, stderr bytes.Buffer
		code := run(args, &stdout, &stderr)
		checkForwardOutcome(t, args, code, stdout.String(), stderr.String(), out)
	})
}
