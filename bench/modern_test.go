package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestBenchModernQuick runs the modern suite with --quick on the test backends (PyTorch left out:
// a Python that does not exist becomes a note; scripts/test.sh runs the suite with PyTorch). It
// checks what the suite measures besides time: every row ran, the window computes fewer tiles,
// the cache bytes read from the tensors equal kvcatalog.Bytes and fall by Hq/Hkv, and the
// cached steps agree with a block step. No timing is asserted.
func TestBenchModernQuick(t *testing.T) {
	jsonPath := filepath.Join(t.TempDir(), "bench.json")
	var stdout, stderr bytes.Buffer
	cfg := Config{Quick: true, Suites: []string{"modern"}, Backends: SplitList(testBackendList(t)),
		Pythons: []string{"/nonexistent/python"}, JSONPath: jsonPath, TorchDevice: "cuda"}
	if err := Run(context.Background(), &stdout, &stderr, cfg); err != nil {
		t.Fatalf("%v\nstdout:\n%s\nstderr:\n%s", err, stdout.String(), stderr.String())
	}
	out := stdout.String()
	for _, want := range []string{
		"## Sliding-window attention vs full causal",
		"| mhalib FlashAttention | go | B1 h2 L1024 dk16 | window 128 | 9 |",
		"## Grouped-query decoding",
		"kvcatalog.Bytes gives the same for every row",
		"PyTorch: /nonexistent/python",
		"This suite times PyTorch on the CPU only (--torch-device cuda is used by the torch suite).",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	data, err := os.ReadFile(jsonPath)
	if err != nil {
		t.Fatal(err)
	}
	var rep benchReport
	if err := json.Unmarshal(data, &rep); err != nil {
		t.Fatalf("JSON: %v", err)
	}
	m := rep.Modern
	if m == nil || len(m.Window) == 0 || len(m.Decode) == 0 {
		t.Fatalf("JSON report lacks the modern suite: %+v", m)
	}
	tiles := map[string]int{} // backend|mask → tiles
	for _, r := range m.Window {
		if r.Error != "" || r.MedianMS <= 0 || len(r.TimesMS) < 3 || r.GFLOPS <= 0 {
			t.Errorf("bad window result %+v", r)
		}
		tiles[r.Backend+"|"+r.Mask] = r.Tiles
		if r.Mask != "causal" && r.VsCausal <= 0 {
			t.Errorf("window row without its ratio to full causal: %+v", r)
		}
	}
	for _, spec := range SplitList(testBackendList(t)) {
		if c, w := tiles[spec+"|causal"], tiles[spec+"|window 128"]; w <= 0 || w >= c {
			t.Errorf("%s: %d tiles with the window, %d full causal: want fewer", spec, w, c)
		}
	}
	mhaBytes := map[string]int64{}
	for _, r := range m.Decode {
		if r.KVHeads == r.Heads {
			mhaBytes[r.Backend] = r.CacheBytes
		}
	}
	for _, r := range m.Decode {
		switch {
		case r.Error != "" || r.TokensPerS <= 0 || r.Runs < 3:
			t.Errorf("bad decoding result %+v", r)
		case r.CacheBytes != r.Formula:
			t.Errorf("%s Hkv %d: cache tensors hold %d bytes, kvcatalog.Bytes says %d", r.Backend, r.KVHeads, r.CacheBytes, r.Formula)
		case r.CacheBytes*int64(r.Heads/r.KVHeads) != mhaBytes[r.Backend]:
			t.Errorf("%s Hkv %d: cache %d bytes, MHA %d: want Hq/Hkv = %d times less", r.Backend, r.KVHeads, r.CacheBytes, mhaBytes[r.Backend], r.Heads/r.KVHeads)
		case r.MaxDiffStep > 1e-5:
			t.Errorf("%s Hkv %d: cached step vs block step max |Δ| %.2e", r.Backend, r.KVHeads, r.MaxDiffStep)
		}
	}
}

// TestBenchModernTorchPooled: PyTorch's window rows timed again after a backend (no decoding
// cases asked) pool their times with the first run's: the median and minimum are over both.
func TestBenchModernTorchPooled(t *testing.T) {
	dir := t.TempDir()
	counter := filepath.Join(dir, "calls")
	// Call n answers the causal row with times 10n, 10n, 10n ms.
	py := fakePython(t, `n=$(($(cat `+counter+` 2>/dev/null || echo 0) + 1)); echo $n >`+counter+`; cat >`+dir+`/req$n.json
echo "{\"torch\": \"2.15.0\", \"threads\": 2, \"cpu_capability\": \"AVX512\", \"window\": [{\"key\": \"L1024\", \"impl\": \"SDPA is_causal\", \"mask\": \"causal\", \"times_ms\": [$((10*n)), $((10*n)), $((10*n))]}], \"decode\": []}"`)
	s := modernConfig(true)
	s.kvHeads = nil
	rep := &modernReport{}
	if !benchModernTorch(Config{Threads: 2, Budget: 1e9}, py, s, []windowCase{s.window}, rep, true) ||
		!benchModernTorch(Config{Threads: 2, Budget: 1e9}, py, s, []windowCase{s.window}, rep, false) {
		t.Fatalf("notes %v", rep.Notes)
	}
	if len(rep.Window) != 1 || len(rep.Window[0].TimesMS) != 6 || rep.Window[0].MedianMS != 15 || rep.Window[0].MinMS != 10 {
		t.Errorf("rows %+v: want one causal row with 6 times, median 15 ms, min 10 ms", rep.Window)
	}
	req, err := os.ReadFile(filepath.Join(dir, "req2.json"))
	if err != nil || !strings.Contains(string(req), `"decode":[]`) || !strings.Contains(string(req), `"seq":1024`) {
		t.Errorf("second request %s (%v): want the window at L 1024 and no decoding cases", req, err)
	}
}
