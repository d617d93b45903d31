package hlo

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/gomlx/gomlx/backends"
	"github.com/mhalab/mhalab/internal/backendtest"
	"github.com/mhalab/mhalab/internal/cli"
	"github.com/mhalab/mhalab/internal/cli/clitest"
	"github.com/mhalab/mhalab/internal/testenv"
	"github.com/mhalab/mhalab/xla"
)

// hloDumpErr is what xla.EnableHLODump returned in TestMain.
var hloDumpErr error

func TestMain(m *testing.M) {
	// Before any XLA backend exists: XLA reads $XLA_FLAGS once, at its first client.
	hloDumpErr = xla.EnableHLODump()
	backendtest.Main(m, "internal/commands/hlo")
}

// xlaCPU returns the XLA CPU backend, or skips the test when its plugin is missing (outside CI).
func xlaCPU(t *testing.T) backends.Backend {
	t.Helper()
	if hloDumpErr != nil {
		t.Fatal(hloDumpErr)
	}
	b, err := backendtest.Get(xla.SpecCPU)
	if err != nil {
		testenv.RequireOrSkip(t, fmt.Sprintf("xla:cpu unavailable: %v", err))
	}
	return b
}

// The StableHLO of MHA with separate q/k/v_proj_weight has one dot_general per projection (q,
// k, v, out) plus two for attention (q·kᵀ, weights·v): 6. For self-attention with a fused
// in_proj_weight mhalib makes q, k and v with one [3E, E] product and cuts its result, so the
// fused layout has 4.
func TestHLOStableHLOHasADotGeneralPerProjection(t *testing.T) {
	b := xlaCPU(t)
	for _, tc := range []struct {
		separate bool
		want     int
	}{{false, 4}, {true, 6}} {
		var out, summary bytes.Buffer
		cfg := Config{Batch: 2, Seq: 8, DModel: 32, Heads: 4, Separate: tc.separate}
		if err := HLO(&out, &summary, b, cfg, StableHLO, false); err != nil {
			t.Fatal(err)
		}
		program := out.String()
		if got := strings.Count(program, `"stablehlo.dot_general"(`); got != tc.want {
			t.Errorf("separate=%v: %d stablehlo.dot_general, want %d\n%s", tc.separate, got, tc.want, summary.String())
		}
		for _, want := range []string{"func.func @main(", "tensor<2x8x32xf32>", "MultiHeadAttention"} {
			if !strings.Contains(program, want) {
				t.Errorf("separate=%v: StableHLO does not contain %q", tc.separate, want)
			}
		}
		t.Logf("separate=%v: %s", tc.separate, summary.String())
	}
}

func TestHLOOptimizedCountsFusions(t *testing.T) {
	b := xlaCPU(t)
	var out, summary bytes.Buffer
	cfg := Config{Batch: 2, Seq: 8, DModel: 32, Heads: 4, Causal: true}
	if err := HLO(&out, &summary, b, cfg, Optimized, false); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(out.String(), "HloModule mhalab_hlo_dump_") || !strings.Contains(out.String(), "fusion(") {
		t.Errorf("optimised HLO does not start with its module or has no fusion:\n%.500s", out.String())
	}
	if !strings.Contains(summary.String(), "fusions") {
		t.Errorf("summary %q has no fusion count", summary.String())
	}
	out.Reset()
	summary.Reset()
	if err := HLO(&out, &summary, b, cfg, HLOStage, true); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "HLO after optimisation:") || summary.Len() == 0 {
		t.Errorf("--stats output %q, summary %q", out.String(), summary.String())
	}
	t.Log("\n" + out.String())
}

func TestRunChecksBeforeCompiling(t *testing.T) {
	ok := Options{Stage: StableHLO, Backend: xla.SpecCPU, Devices: 1, MaxMemory: 1 << 30, Config: Config{Batch: 2, Seq: 8, DModel: 32, Heads: 4}}
	for _, c := range []struct {
		edit  func(*Options)
		want  string
		usage bool
	}{
		{func(o *Options) { o.Stage = "llvm" }, `--stage "llvm": want stablehlo, hlo or optimized`, true},
		{func(o *Options) { o.Backend = xla.SpecGo }, "--backend go: the pure-Go backend does not compile to HLO", true},
		{func(o *Options) { o.Backend = "tpu" }, "tpu", true},
		{func(o *Options) { o.Heads = 5 }, "--heads 5 does not divide --dmodel 32", false},
		{func(o *Options) { o.Devices = 0 }, "--devices 0: want 1 to", true},
		{func(o *Options) { o.Devices, o.Given = 2, cli.Given{"stage": true} }, "--devices 2 shows XLA's HLO of one device's program", true},
		{func(o *Options) { o.Devices, o.Heads, o.DModel = 3, 4, 32 }, "--devices 3 does not divide --heads 4", true},
		{func(o *Options) { o.Seq, o.MaxMemory = 1<<40, 1<<62 }, "more than XLA can address", false},
	} {
		o := ok
		c.edit(&o)
		var out bytes.Buffer
		err := o.Run(context.Background(), cli.IO{Out: &out, Err: &out})
		clitest.Refused(t, fmt.Sprintf("%+v", o), err, out.String(), c.want, c.usage)
	}
}

func TestRunPrintsStats(t *testing.T) {
	xlaCPU(t)
	var out, errs bytes.Buffer
	o := Options{Stage: StableHLO, Stats: true, Backend: xla.SpecCPU, Devices: 1, MaxMemory: 1 << 30, Config: Config{Batch: 2, Seq: 8, DModel: 32, Heads: 4}}
	if err := o.Run(context.Background(), cli.IO{Out: &out, Err: &errs}); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(out.String(), "StableHLO: ") || !strings.Contains(errs.String(), "mhalab hlo: backend xla:cpu") {
		t.Errorf("stdout %q, stderr %q", out.String(), errs.String())
	}
}
