package xla_test

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gomlx/gomlx/backends"
	"github.com/gomlx/gomlx/pkg/core/dtypes"
	. "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/shapes"
	"github.com/gomlx/gomlx/pkg/ml/context"
	"github.com/mhalab/mhalab/internal/backendtest"
	"github.com/mhalab/mhalab/xla"
)

// attention is single-head self-attention written with plain graph ops, so that these tests
// do not depend on mhalib: four projections (one DotGeneral each) and two attention products.
//
//	x: [batch, seq, dim] → [batch, seq, dim]
func attention(ctx *context.Context, x *Node) *Node {
	dim := x.Shape().Dimensions[2]
	project := func(name string, x *Node) *Node {
		w := ctx.In(name).VariableWithShape("weight", shapes.Make(x.DType(), dim, dim)).ValueGraph(x.Graph())
		return DotGeneral(x, []int{2}, nil, w, []int{1}, nil) // x·Wᵀ: [batch, seq, dim]
	}
	q, k, v := project("q", x), project("k", x), project("v", x)
	scores := DotGeneral(q, []int{2}, []int{0}, k, []int{2}, []int{0}) // [batch, seq, seq]
	scores = MulScalar(scores, 1/math.Sqrt(float64(dim)))
	weights := Softmax(scores, -1)
	out := DotGeneral(weights, []int{2}, []int{0}, v, []int{1}, []int{0}) // [batch, seq, dim]
	return project("o", out)
}

var attentionInput = shapes.Make(dtypes.Float32, 2, 5, 16)

// dumpDirs lists this process's XLA dump folders (see hlo.go): none may be left behind.
func dumpDirs(t *testing.T) []string {
	t.Helper()
	dirs, err := filepath.Glob(filepath.Join(os.TempDir(), fmt.Sprintf("mhalab-xla-dump-%d-*", os.Getpid())))
	if err != nil {
		t.Fatal(err)
	}
	return dirs
}

// initialEnv returns the value of an environment variable when the process started (from
// /proc/self/environ: os.Setenv does not change it).
func initialEnv(t *testing.T, name string) string {
	t.Helper()
	data, err := os.ReadFile("/proc/self/environ")
	if err != nil {
		t.Skipf("no /proc/self/environ: %v", err)
	}
	for _, kv := range strings.Split(string(data), "\x00") {
		if v, ok := strings.CutPrefix(kv, name+"="); ok {
			return v
		}
	}
	return ""
}

// Importing xla (and every package of this test binary) leaves $XLA_FLAGS alone.
func TestImportLeavesXLAFlagsAlone(t *testing.T) {
	if want := initialEnv(t, "XLA_FLAGS"); xlaFlagsAfterInit != want {
		t.Errorf("after the packages' init, XLA_FLAGS = %q; the process started with %q", xlaFlagsAfterInit, want)
	}
}

// EnableHLODump (called by TestMain) adds the dump flags, restricted to OptimizedHLO's modules.
func TestEnableHLODumpSetsOnlyOurModules(t *testing.T) {
	if hloDumpErr != nil {
		t.Fatal(hloDumpErr)
	}
	flags := os.Getenv("XLA_FLAGS")
	for _, want := range []string{"--xla_dump_to=", "--xla_dump_hlo_as_text", "--xla_dump_hlo_module_re=^mhalab_hlo_dump_"} {
		if !strings.Contains(flags, want) {
			t.Errorf("XLA_FLAGS = %q, want it to contain %q", flags, want)
		}
	}
	if err := xla.EnableHLODump(); err != nil {
		t.Errorf("second EnableHLODump: %v, want nil", err)
	}
	if got := os.Getenv("XLA_FLAGS"); got != flags {
		t.Errorf("second EnableHLODump changed XLA_FLAGS from %q to %q", flags, got)
	}
}

// runHLOLateChild creates an XLA CPU backend, then asks for the dumps: both OptimizedHLO and
// EnableHLODump must say it is too late, and StableHLO still works.
func runHLOLateChild() int {
	b, err := xla.New(xla.SpecCPU)
	if err != nil {
		fmt.Println("no xla:cpu:", err)
		return 0
	}
	_, err = xla.OptimizedHLO(b, nil, attention, attentionInput)
	fmt.Println("OptimizedHLO:", err)
	fmt.Println("EnableHLODump:", xla.EnableHLODump())
	_, err = xla.StableHLO(b, nil, attention, attentionInput)
	fmt.Println("StableHLO:", err)
	return 0
}

func TestHLODumpAfterTheFirstBackendIsAnError(t *testing.T) {
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), childEnv+"=hlo-late", "XLA_FLAGS="+xlaFlagsAfterInit)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child failed: %v\n%s", err, out)
	}
	text := string(out)
	if strings.Contains(text, "no xla:cpu:") {
		t.Skip(text)
	}
	for _, want := range []string{
		"OptimizedHLO: xla: OptimizedHLO needs XLA's dump flags: call xla.EnableHLODump before creating the first XLA backend",
		"EnableHLODump: xla: EnableHLODump called after an XLA backend was created",
		"StableHLO: <nil>",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("child output lacks %q:\n%s", want, text)
		}
	}
}

func TestStableHLOOfAttention(t *testing.T) {
	backendtest.Run(t, func(t *testing.T, b backends.Backend) {
		program, err := xla.StableHLO(b, nil, attention, attentionInput)
		if !isXLA(b) {
			if err == nil || !strings.Contains(err.Error(), "needs an XLA backend") {
				t.Fatalf("StableHLO on %s: err = %v, want one saying it needs an XLA backend", b.Name(), err)
			}
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		ops := xla.StableHLOOps(program)
		t.Logf("StableHLO ops: %s", xla.FormatOps(ops))
		// One dot_general per projection (q, k, v, o) and two for the attention products.
		if got := ops["stablehlo.dot_general"]; got != 6 {
			t.Errorf("stablehlo.dot_general × %d, want 6 (4 projections + q·kᵀ + weights·v)\n%s", got, program)
		}
		if ops["stablehlo.exponential"] != 1 {
			t.Errorf("stablehlo.exponential × %d, want 1 (the softmax)", ops["stablehlo.exponential"])
		}
		for _, want := range []string{"func.func @main(", "tensor<2x5x16xf32>", "tensor<2x5x5xf32>"} {
			if !strings.Contains(program, want) {
				t.Errorf("StableHLO program does not contain %q:\n%s", want, program)
			}
		}
	})
}

func TestOptimizedHLOFusesOps(t *testing.T) {
	backendtest.Run(t, func(t *testing.T, b backends.Backend) {
		dump, err := xla.OptimizedHLO(b, nil, attention, attentionInput)
		if !isXLA(b) {
			if err == nil || !strings.Contains(err.Error(), "needs an XLA backend") {
				t.Fatalf("OptimizedHLO on %s: err = %v, want one saying it needs an XLA backend", b.Name(), err)
			}
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		if dirs := dumpDirs(t); len(dirs) > 0 {
			t.Errorf("dump folders left behind: %v", dirs)
		}
		before, after := xla.EntryOps(dump.Before), xla.EntryOps(dump.After)
		t.Logf("before optimisation: %s", xla.FormatOps(before))
		t.Logf("after optimisation:  %s (%d fusions)", xla.FormatOps(after), dump.Fusions)
		if before["dot"] != 6 {
			t.Errorf("HLO before optimisation has %d dot, want 6:\n%s", before["dot"], dump.Before)
		}
		if before["fusion"] != 0 {
			t.Errorf("HLO before optimisation has %d fusions, want 0", before["fusion"])
		}
		if dump.Fusions < 1 || after["fusion"] != dump.Fusions {
			t.Errorf("Fusions = %d, fusion instructions in ENTRY = %d: want the same, ≥ 1:\n%s", dump.Fusions, after["fusion"], dump.After)
		}
		skip := []string{"parameter", "constant"}
		if nb, na := xla.TotalOps(before, skip...), xla.TotalOps(after, skip...); na >= nb {
			t.Errorf("ENTRY has %d ops after optimisation, %d before: want fewer after fusion", na, nb)
		}
		// Scores [2, 5, 5] and the projections [2, 5, 16] pass through scratch memory; the total
		// also holds the parameters (x and four [16, 16] weights) and the output.
		minTotal := int64(4 * (2*5*16 + 4*16*16 + 2*5*16))
		if dump.TempBytes <= 0 || dump.TotalBytes < minTotal || dump.TotalBytes < dump.TempBytes {
			t.Errorf("TempBytes = %d, TotalBytes = %d: want 0 < temp ≤ total, total ≥ %d", dump.TempBytes, dump.TotalBytes, minTotal)
		}
		if !strings.Contains(dump.After, "HloModule mhalab_hlo_dump_") {
			t.Errorf("optimised HLO does not name the module mhalab_hlo_dump_*:\n%.300s", dump.After)
		}
	})
}

// A graph that fails to build is an error naming the cause, and still leaves no dump folder.
func TestOptimizedHLOOfABrokenGraphIsAnError(t *testing.T) {
	backendtest.Run(t, func(t *testing.T, b backends.Backend) {
		if !isXLA(b) {
			t.Skip("needs an XLA backend")
		}
		broken := func(ctx *context.Context, x *Node) *Node {
			return Add(x, Ones(x.Graph(), shapes.Make(dtypes.Float32, 3))) // [2 5 16] + [3]
		}
		if _, err := xla.OptimizedHLO(b, nil, broken, attentionInput); err == nil {
			t.Fatal("OptimizedHLO of a graph adding [2 5 16] and [3]: no error")
		} else {
			t.Log(err)
		}
		if _, err := xla.StableHLO(b, nil, broken, attentionInput); err == nil {
			t.Fatal("StableHLO of a graph adding [2 5 16] and [3]: no error")
		}
		if dirs := dumpDirs(t); len(dirs) > 0 {
			t.Errorf("dump folders left behind: %v", dirs)
		}
	})
}

const hloSample = `HloModule m, entry_computation_layout={(f32[2,3]{1,0})->f32[2,3]{1,0}}

%fused_computation (p: f32[2,3]) -> f32[2,3] {
  %p = f32[2,3]{1,0} parameter(0)
  %e = f32[2,3]{1,0} exponential(%p)
  ROOT %n = f32[2,3]{1,0} negate(%e)
}

ENTRY %main.4 (Arg_0.1: f32[2,3]) -> (f32[2,3], f32[2,3]) {
  %Arg_0.1 = f32[2,3]{1,0} parameter(0), metadata={op_name="x(y)"}
  %fusion = f32[2,3]{1,0} fusion(%Arg_0.1), kind=kLoop, calls=%fused_computation
  %dot.1 = f32[2,2]{1,0} dot(%fusion, %fusion), lhs_contracting_dims={1}, rhs_contracting_dims={1}
  ROOT %tuple = (f32[2,3]{1,0}, f32[2,3]{1,0}) tuple(%fusion, %fusion)
}
`

func TestEntryOpsAndCountFusions(t *testing.T) {
	got := xla.EntryOps(hloSample)
	want := map[string]int{"parameter": 1, "fusion": 1, "dot": 1, "tuple": 1}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("EntryOps = %v, want %v", got, want)
	}
	if n := xla.CountFusions(hloSample); n != 1 {
		t.Errorf("CountFusions = %d, want 1", n)
	}
	if n := xla.TotalOps(got, "parameter", "tuple"); n != 2 {
		t.Errorf("TotalOps without parameter and tuple = %d, want 2", n)
	}
	if s := xla.FormatOps(got); s != "dot 1, fusion 1, parameter 1, tuple 1" {
		t.Errorf("FormatOps = %q", s)
	}
}

func TestStableHLOOpsSkipsAttributes(t *testing.T) {
	program := `module @m {
  func.func @main(%arg0: tensor<2x3xf32>) -> tensor<2x2xf32> {
    %0 = "stablehlo.dot_general"(%arg0, %arg0) {
      dot_dimension_numbers = #stablehlo.dot<lhs_contracting_dimensions = [1], rhs_contracting_dimensions = [1]>,
      precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]
    } : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x2xf32>
    %1 = "stablehlo.exponential"(%0) : (tensor<2x2xf32>) -> tensor<2x2xf32>
    "func.return"(%1) : (tensor<2x2xf32>) -> ()
  }
}`
	got := xla.StableHLOOps(program)
	want := map[string]int{"stablehlo.dot_general": 1, "stablehlo.exponential": 1}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("StableHLOOps = %v, want %v", got, want)
	}
}

// The package has no init function: importing it changes nothing in the process (it used to
// rewrite $XLA_FLAGS and switch off GoMLX's plugin download in init).
func TestNoInitFunction(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			if fn, ok := d.(*ast.FuncDecl); ok && fn.Recv == nil && fn.Name.Name == "init" {
				t.Errorf("%s: func init at %s: package xla must not act on import", name, fset.Position(fn.Pos()))
			}
		}
	}
}
