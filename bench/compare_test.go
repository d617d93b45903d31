package bench

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestBenchCompare(t *testing.T) {
	seed := mhaCase{Group: "seed003", B: 32, L: 128, E: 512, H: 8}
	flash := mhaCase{Group: "long", B: 1, L: 4096, E: 512, H: 8, Flash: true}
	plain := mhaCase{Group: "long", B: 1, L: 4096, E: 512, H: 8}
	old := &benchReport{Started: "2026-12-01T01:00:00Z", Machine: machineInfo{LoadBefore: "1.00 1.00 1.00", LoadAfter: "2.00 1.50 1.00"},
		MHA: []mhaResult{
			{mhaCase: seed, Backend: "xla:cpu", Impl: "mhalib plain", MedianMS: 80, CPUMS: 150, VsTorch: map[string]float64{"PyTorch 2 nn.MHA": 1.25}},
			{mhaCase: seed, Backend: "torch cpu", Impl: "PyTorch 2 nn.MHA", MedianMS: 64},
			{mhaCase: plain, Backend: "xla:cpu", Impl: "mhalib plain", MedianMS: 700},
		}}
	cur := &benchReport{MHA: []mhaResult{
		{mhaCase: seed, Backend: "xla:cpu", Impl: "mhalib plain", MedianMS: 60, CPUMS: 120, VsTorch: map[string]float64{"PyTorch 2 nn.MHA": 0.9, "PyTorch 3 nn.MHA": 1.2}},
		{mhaCase: seed, Backend: "torch cpu", Impl: "PyTorch 2 nn.MHA", MedianMS: 66.7},
		{mhaCase: flash, Backend: "xla:cpu", Impl: "mhalib flash", MedianMS: 300},
	}}
	var out bytes.Buffer
	printComparisons(&out, old, cur, "old.json")
	wantLines(t, out.String(), []string{
		"## Compared with old.json (2026-12-01T01:00:00Z; load average before 1.00 1.00 1.00, after 2.00 1.50 1.00)",
		"| seed003 | B32 L128 E512 h8 | no | mhalib plain | xla:cpu | 80.0 ms | 60.0 ms | −25.0 % | 150 ms | 120 ms | −20.0 % | 1.25× | 0.90× | −28.0 % |",
		"| seed003 | B32 L128 E512 h8 | no | PyTorch 2 nn.MHA | torch cpu | 64.0 ms | 66.7 ms | +4.2 % | — | — | — | — | — | — |",
		"| long | B1 L4096 E512 h8 | no | mhalib flash | xla:cpu | — | 300 ms | new | — | — | — | — | — | — |",
		"| long | B1 L4096 E512 h8 | no | mhalib plain | xla:cpu | 700 ms | not run now | | | | | | | |",
	})
}

// wantLines fails t for each of lines that out does not contain.
func wantLines(t *testing.T, out string, lines []string) {
	t.Helper()
	for _, want := range lines {
		if !strings.Contains(out, want) {
			t.Errorf("comparison lacks %q:\n%s", want, out)
		}
	}
}

// TestBenchCompareMiniLM: a minilm-only run compared with an earlier one prints the heading and
// the MiniLM rows (before, the heading and an empty forward-pass table, and no MiniLM rows).
func TestBenchCompareMiniLM(t *testing.T) {
	old := &benchReport{Started: "2026-12-01T01:00:00Z", MiniLM: []minilmResult{
		{Backend: "torch cpu", Impl: "PyTorch 2.15.0, transformers 5.23.0 (sdpa), 2 threads", Batch: 32, MedianMS: 77.2},
		{Backend: "go", Impl: "mhalab models/minilm", Batch: 32, MedianMS: 71.7, VsTorch: 0.929},
		{Backend: "xla:cpu", Impl: "mhalab models/minilm", Batch: 4, MedianMS: 10, VsTorch: 0.9},
	}}
	cur := &benchReport{MiniLM: []minilmResult{
		{Backend: "torch cpu", Impl: "PyTorch 2.16.0, transformers 5.23.0 (sdpa), 2 threads", Batch: 32, MedianMS: 81.1},
		{Backend: "go", Impl: "mhalab models/minilm", Batch: 32, MedianMS: 60.6, VsTorch: 0.747},
		{Backend: "xla:cpu", Impl: "mhalab models/minilm", Batch: 32, MedianMS: 72.0, VsTorch: 0.888},
		{Backend: "go-gomlx", Impl: "mhalab models/minilm", Batch: 32, MedianMS: 900, VsTorch: 11.1},
	}}
	var out bytes.Buffer
	printComparisons(&out, old, cur, "old.json")
	wantLines(t, out.String(), []string{
		"## Compared with old.json (2026-12-01T01:00:00Z;",
		"| PyTorch 2.16.0, transformers 5.23.0 (sdpa), 2 threads | torch cpu | 32 | 77.2 ms | 81.1 ms | +5.1 % | — | — |",
		"| mhalab models/minilm | go | 32 | 71.7 ms | 60.6 ms | −15.5 % | 0.93× | 0.75× |",
		"| mhalab models/minilm | xla:cpu | 32 | 10.0 ms | 72.0 ms | batch 4 then | 0.90× | 0.89× |",
		"| mhalab models/minilm | go-gomlx | 32 | — | 900 ms | new | — | 11.10× |",
	})
	if strings.Contains(out.String(), "| case |") {
		t.Errorf("a run without forward passes printed their table:\n%s", out.String())
	}
}

// TestBenchCompareBadFile checks that a --compare file that cannot be used fails at once with
// one line naming it.
func TestBenchCompareBadFile(t *testing.T) {
	dir := t.TempDir()
	notJSON := filepath.Join(dir, "notes.txt")
	empty := filepath.Join(dir, "empty.json")
	if err := os.WriteFile(notJSON, []byte("hello"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(empty, []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]string{
		filepath.Join(dir, "missing.json"): "--compare: open " + filepath.Join(dir, "missing.json") + ": no such file or directory",
		notJSON:                            "--compare " + notJSON + ": not a JSON report of mhalab bench: invalid character",
		empty:                              "--compare " + empty + `: not a JSON report of mhalab bench (no "started" field)`,
	} {
		err := Run(context.Background(), io.Discard, io.Discard, Config{Quick: true, Suites: []string{"mha"}, Backends: []string{"go"}, ComparePath: path})
		if err == nil || !strings.HasPrefix(err.Error(), want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("--compare %s: err = %v, want one line starting %q", path, err, want)
		}
	}
}

func TestRelChange(t *testing.T) {
	for _, c := range []struct {
		then, now float64
		want      string
	}{{100, 90, "−10.0 %"}, {100, 104, "+4.0 %"}, {100, 100, "+0.0 %"}, {0, 5, "—"}} {
		if got := relChange(c.then, c.now); got != c.want {
			t.Errorf("relChange(%g, %g) = %q, want %q", c.then, c.now, got, c.want)
		}
	}
}

// TestCompareReports: two saved reports compared, the memory rows by their label.
func TestCompareReports(t *testing.T) {
	dir := t.TempDir()
	grad := memConfig{Backend: "go", Kind: "grad-flash", B: 1, L: 4096, H: 8, D: 512, N: 1}
	write := func(name string, rep *benchReport) string {
		path := filepath.Join(dir, name)
		if err := writeJSON(path, rep); err != nil {
			t.Fatal(err)
		}
		return path
	}
	old := write("old.json", &benchReport{Started: "then", BlockGrad: []memResult{{memConfig: grad, PeakRSSKiB: 2 << 20, RunMS: 4000}}})
	cur := write("new.json", &benchReport{Started: "now", BlockGrad: []memResult{{memConfig: grad, PeakRSSKiB: 1 << 20, RunMS: 3000},
		{memConfig: memConfig{Backend: "go", Kind: "grad-flash", B: 1, L: 16384, H: 8, D: 512, N: 1}, PeakRSSKiB: 1 << 20, RunMS: 9000}}})
	var out bytes.Buffer
	if err := CompareReports(&out, old, cur); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"| go memory: pre-LN block gradient, flash attention, B1 L4096 E512 h8 | 2.0 GiB | 1.0 GiB | 4 s | 3 s | −25.0 % |",
		"| go memory: pre-LN block gradient, flash attention, B1 L16384 E512 h8 | not run | 1.0 GiB | — | 9 s | — |",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("comparison lacks %q:\n%s", want, out.String())
		}
	}
}
