package bench

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fakeTorch is a stand-in for parity/bench_torch.py, run with /bin/sh: the n-th call answers a
// median of n milliseconds for the requested shape, so that the test can tell which PyTorch
// measurement each ratio used.
const fakeTorch = `count=$(cat "$0.count" 2>/dev/null || echo 0)
count=$((count + 1))
echo $count > "$0.count"
key=$(sed -n 's/.*"key":"\([^"]*\)".*/\1/p')
echo "$key" >> "$0.keys"
echo '{"torch":"0.fake","blas":"none","threads":1,"cpu_capability":"none","device":"cpu","results":[{"key":"'$key'","times_ms":['$count','$count','$count'],"median_ms":'$count',"min_ms":'$count',"runs":3}]}'
`

// TestBenchTorchBeforeAfter checks that PyTorch is timed before and after every mhalib case of
// its shape, and that each ratio divides by the mean of those two medians.
func TestBenchTorchBeforeAfter(t *testing.T) {
	script := filepath.Join(t.TempDir(), "bench_torch.sh")
	if err := os.WriteFile(script, []byte(fakeTorch), 0o644); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	cfg := Config{Quick: true, Suites: []string{"mha", "torch"}, Backends: []string{"go"}, Pythons: []string{"/bin/sh"},
		TorchScript: script, Budget: 1}
	rep, err := run(context.Background(), &stdout, &stderr, cfg)
	if err != nil {
		t.Fatalf("%v\n%s\n%s", err, stdout.String(), stderr.String())
	}
	keysData, err := os.ReadFile(script + ".keys")
	if err != nil {
		t.Fatal(err)
	}
	// Quick cases: seed003 (1 case), long (2), long/causal (1), llm/causal (1): each shape once
	// more than it has cases, in the order of the cases.
	wantKeys := "seed003 seed003 long long long long/causal long/causal llm/causal llm/causal"
	if got := strings.Join(strings.Fields(string(keysData)), " "); got != wantKeys {
		t.Fatalf("PyTorch timed on %q, want %q", got, wantKeys)
	}
	// PyTorch's n-th call took n ms: case i of the run sits between calls.
	wantPairs := []struct{ before, after float64 }{{1, 2}, {3, 4}, {4, 5}, {6, 7}, {8, 9}}
	var mha []mhaResult
	for _, r := range rep.MHA {
		if !r.isTorch() {
			mha = append(mha, r)
		}
	}
	if len(mha) != len(wantPairs) {
		t.Fatalf("%d mhalib results, want %d", len(mha), len(wantPairs))
	}
	for i, r := range mha {
		w := wantPairs[i]
		if len(r.Torch) != 1 || r.Torch[0].BeforeMS != w.before || r.Torch[0].AfterMS != w.after {
			t.Errorf("%s %s: PyTorch before/after %+v, want %g / %g", r.key(), r.Impl, r.Torch, w.before, w.after)
			continue
		}
		impl := r.Torch[0].Impl
		if want := r.MedianMS / ((w.before + w.after) / 2); r.VsTorch[impl] != want {
			t.Errorf("%s %s: ratio %g, want %g", r.key(), r.Impl, r.VsTorch[impl], want)
		}
		if r.Load == "" {
			t.Errorf("%s %s: no load average", r.key(), r.Impl)
		}
	}
	// PyTorch's rows pool its measurements: long was timed 3 times (runs of 3, 4 and 5 ms).
	for _, r := range rep.MHA {
		if r.isTorch() && r.key() == "long" && (r.Measurements != 3 || len(r.TimesMS) != 9 || r.MedianMS != 4 || r.MinMS != 3) {
			t.Errorf("pooled PyTorch row for long: %d measurements, %d runs, median %g, min %g; want 3, 9, 4, 3",
				r.Measurements, len(r.TimesMS), r.MedianMS, r.MinMS)
		}
	}
	if want := "| seed003 | B4 L32 E64 h4 | no | mhalib plain (Auto) | go |"; !strings.Contains(stdout.String(), want) ||
		!strings.Contains(stdout.String(), "| 1.00 ms / 2.00 ms |") {
		t.Errorf("table lacks the mhalib row or PyTorch's before / after:\n%s", stdout.String())
	}
}
