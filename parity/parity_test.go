package parity_test

import (
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"text/tabwriter"

	"github.com/gomlx/gomlx/backends"
	"github.com/gomlx/gomlx/pkg/core/tensors"

	"github.com/mhalab/mhalab/internal/backendtest"
	"github.com/mhalab/mhalab/mhalib/dotgrad"
	"github.com/mhalab/mhalab/parity"
)

func TestMain(m *testing.M) { dotgrad.Install(); backendtest.Main(m, "parity") }

// referenceDir is $MHALAB_PARITY_DIR (set by `make parity` to freshly generated references) or
// the committed fixtures in testdata.
func referenceDir() (dir string, live bool) {
	if d := os.Getenv("MHALAB_PARITY_DIR"); d != "" {
		return d, true
	}
	return "testdata", false
}

// worst tracks, per backend and case group, the largest error ratio vs PyTorch's own error and
// the largest share of the bound used.
type worst struct {
	ratio, margin      float64
	ratioAt, marginAt  string
	cases, comparisons int
}

var (
	mu      sync.Mutex
	summary = map[string]map[string]*worst{} // backend → group → worst
)

func entry(backend, group string) *worst {
	if summary[backend] == nil {
		summary[backend] = map[string]*worst{}
	}
	w := summary[backend][group]
	if w == nil {
		w = &worst{}
		summary[backend][group] = w
	}
	return w
}

func countCase(backend, group string) {
	mu.Lock()
	defer mu.Unlock()
	entry(backend, group).cases++
}

// records is $MHALAB_PARITY_RECORDS opened for appending, or nil: one line per comparison,
// "backend case result err bound torch_err max_err" (tab-separated): err and bound at the element
// with the largest err/bound, PyTorch float32's max error and mhalib's, for the soak's
// distribution of err/bound (parity/soak.py).
var records = sync.OnceValue(func() *os.File {
	path := os.Getenv("MHALAB_PARITY_RECORDS")
	if path == "" {
		return nil
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		panic(fmt.Errorf("MHALAB_PARITY_RECORDS: %w", err))
	}
	return f
})

func record(backend, group, caseName string, res parity.Result) {
	mu.Lock()
	defer mu.Unlock()
	if f := records(); f != nil {
		fmt.Fprintf(f, "%s\t%s\t%s\t%.6g\t%.6g\t%.6g\t%.6g\n", backend, caseName, res.Name, res.WorstErr(), res.Bound(), res.TorchErr, res.Err)
	}
	w := entry(backend, group)
	w.comparisons++
	if r := res.Ratio(); res.TorchErr > 0 && r > w.ratio {
		w.ratio, w.ratioAt = r, caseName+":"+res.Name
	}
	if m := res.Worst; m > w.margin || math.IsNaN(m) {
		w.margin, w.marginAt = m, caseName+":"+res.Name
	}
}

// TestParity recomputes every reference with mhalib on each backend: outputs, attention weights,
// gradients w.r.t. query/key/value and every parameter, each within the tolerance policy.
func TestParity(t *testing.T) {
	dir, live := referenceDir()
	refs, err := parity.LoadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(refs) == 0 {
		t.Fatalf("no reference files in %s (generate them: make parity, or python3 parity/gen.py --out %s)", dir, dir)
	}
	t.Logf("%d references from %s (PyTorch %s)", len(refs), dir, refs[0].TorchVersion)
	for _, ref := range refs {
		t.Run(ref.Config.Name, func(t *testing.T) {
			backendtest.Run(t, func(t *testing.T, b backends.Backend) {
				backendName := t.Name()[strings.LastIndex(t.Name(), "/")+1:]
				got, err := runner(b).Run(ref)
				if err != nil {
					t.Fatalf("%s (replay: python3 parity/gen.py --out DIR --cases %s): %v", ref.Config.Name, replayArg(ref), err)
				}
				for name := range got {
					if ref.Tensors["ref64."+name] == nil {
						t.Errorf("mhalib computed %s, which PyTorch does not have", name)
					}
				}
				countCase(backendName, ref.Config.Group())
				for _, name := range ref.ResultNames() {
					res, err := ref.Check(name, got[name])
					if err != nil {
						t.Errorf("%v", err)
						continue
					}
					record(backendName, ref.Config.Group(), ref.Config.Name, res)
					if !res.OK {
						t.Errorf("%s (seed %d; replay: python3 parity/gen.py --out DIR --cases %s)", res, ref.Config.Seed, replayArg(ref))
					} else if testing.Verbose() {
						t.Logf("%s", res)
					}
				}
			})
		})
	}
	printSummary(dir, live, len(refs))
	runnersMu.Lock()
	for b, r := range runners {
		if n := r.Reused(); n > 0 {
			fmt.Printf("=== parity: %s: %d references ran a graph compiled for an earlier one of the same structure\n", b.Name(), n)
		}
	}
	runnersMu.Unlock()
}

// runners holds one parity.Runner per backend for TestParity. It keeps up to
// $MHALAB_PARITY_KEEP_GRAPHS compiled graphs (default 0) for references of the same structure:
// the soak's pooled configurations (parity/soak.py sets it).
var (
	runnersMu sync.Mutex
	runners   = map[backends.Backend]*parity.Runner{}
)

func runner(b backends.Backend) *parity.Runner {
	runnersMu.Lock()
	defer runnersMu.Unlock()
	r := runners[b]
	if r == nil {
		keep, _ := strconv.Atoi(os.Getenv("MHALAB_PARITY_KEEP_GRAPHS"))
		r = parity.NewRunner(b, keep)
		runners[b] = r
	}
	return r
}

func replayArg(ref *parity.Reference) string {
	if p := ref.Config.Pool; len(p) == 2 {
		return fmt.Sprintf("none --random 1 --seed %d --pool %d,%d", ref.Config.Seed, p[0], p[1])
	}
	if strings.HasPrefix(ref.Config.Name, "random_") {
		return fmt.Sprintf("none --random 1 --seed %d", ref.Config.Seed)
	}
	return ref.Config.Name
}

// printSummary prints the worst error ratio vs PyTorch's own per backend and case group to
// stdout (go test shows it with -v) and, when $MHALAB_PARITY_REPORT names a file, there (`make
// parity` prints that file, so that CI logs carry the numbers).
func printSummary(dir string, live bool, n int) {
	mu.Lock()
	defer mu.Unlock()
	var w io.Writer = os.Stdout
	if path := os.Getenv("MHALAB_PARITY_REPORT"); path != "" {
		if f, err := os.Create(path); err == nil {
			defer f.Close()
			w = io.MultiWriter(os.Stdout, f)
		}
	}
	source := "committed fixtures"
	if live {
		source = "live PyTorch references"
	}
	fmt.Fprintf(w, "=== parity: %d cases from %s (%s); ratio = max|mhalib−ref64| / max|torch32−ref64|; err/bound = max over elements of |mhalib−ref64| / (error-model bound + %g)\n",
		n, dir, source, parity.BoundFloor)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "backend\tgroup\tcases\ttensors\tworst ratio\tat\tworst err/bound\tat")
	var backendNames []string
	for b := range summary {
		backendNames = append(backendNames, b)
	}
	sort.Strings(backendNames)
	for _, b := range backendNames {
		var groups []string
		for g := range summary[b] {
			groups = append(groups, g)
		}
		sort.Strings(groups)
		for _, g := range groups {
			w := summary[b][g]
			fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%.2f\t%s\t%.2f\t%s\n", b, g, w.cases, w.comparisons, w.ratio, w.ratioAt, w.margin, w.marginAt)
		}
	}
	_ = tw.Flush()
}

// The comparison catches a wrong parameter: a 0.1% change of bias_k moves the output far beyond
// the bound, and so does a reference moved by twice the bound.
func TestParityDetectsErrors(t *testing.T) {
	ref, err := parity.Load("testdata/mha_bias_kv.safetensors")
	if err != nil {
		t.Fatal(err)
	}
	backendtest.Run(t, func(t *testing.T, b backends.Backend) {
		got, err := parity.Run(b, ref)
		if err != nil {
			t.Fatal(err)
		}
		res, err := ref.Check("attn_output", got["attn_output"])
		if err != nil || !res.OK {
			t.Fatalf("unchanged case: %v %v", res, err)
		}
		// A reference moved by twice its bound in one element.
		moved := *ref
		moved.Tensors = maps.Clone(ref.Tensors)
		vals, _ := parity.Float64s(ref.Tensors["ref64.attn_output"])
		bounds, err := ref.Bounds("attn_output")
		if err != nil {
			t.Fatal(err)
		}
		vals[0] += 2 * (bounds[0] + parity.BoundFloor)
		moved.Tensors["ref64.attn_output"] = tensors.FromFlatDataAndDimensions(vals, ref.Tensors["ref64.attn_output"].Shape().Dimensions...)
		if res, _ := moved.Check("attn_output", got["attn_output"]); res.OK {
			t.Errorf("a reference moved by twice the bound passed: %s", res)
		}
		// A parameter off by 0.1%.
		moved = *ref
		moved.Tensors = maps.Clone(ref.Tensors)
		bk := tensors.MustCopyFlatData[float32](ref.Tensors["param.bias_k"])
		for i := range bk {
			bk[i] *= 1.001
		}
		moved.Tensors["param.bias_k"] = tensors.FromFlatDataAndDimensions(bk, 1, 1, len(bk))
		got, err = parity.Run(b, &moved)
		if err != nil {
			t.Fatal(err)
		}
		if res, _ := ref.Check("attn_output", got["attn_output"]); res.OK {
			t.Errorf("bias_k changed by 0.1%% passed: %s", res)
		} else {
			t.Logf("bias_k × 1.001: %s (err/bound %.1f)", res, res.Worst)
		}
	})
}

// The comparison catches a mask off by one key: the explicit causal mask of mha_causal_bool
// with each query also seeing the next key, and the key padding mask of mha_kpm_bool moved one
// key to the right.
func TestParityDetectsOffByOneMask(t *testing.T) {
	for _, c := range []struct{ file, mask string }{
		{"testdata/mha_causal_bool.safetensors", "input.attn_mask"},
		{"testdata/mha_kpm_bool.safetensors", "input.key_padding_mask"},
	} {
		ref, err := parity.Load(c.file)
		if err != nil {
			t.Fatal(err)
		}
		moved := *ref
		moved.Tensors = maps.Clone(ref.Tensors)
		moved.Tensors[c.mask] = shiftRight(t, ref.Tensors[c.mask])
		t.Run(ref.Config.Name, func(t *testing.T) {
			backendtest.Run(t, func(t *testing.T, b backends.Backend) {
				for _, r := range []*parity.Reference{ref, &moved} {
					got, err := parity.Run(b, r)
					if err != nil {
						t.Fatal(err)
					}
					res, err := ref.Check("attn_output", got["attn_output"])
					if err != nil {
						t.Fatal(err)
					}
					switch {
					case r == ref && !res.OK:
						t.Fatalf("%s unchanged: %s", ref.Config.Name, res)
					case r == &moved && res.OK:
						t.Errorf("%s with %s off by one key passed: %s", ref.Config.Name, c.mask, res)
					case r == &moved:
						t.Logf("%s with %s off by one key: %s (err/bound %.0f)", ref.Config.Name, c.mask, res, res.Worst)
					}
				}
			})
		})
	}
}

// shiftRight moves a bool mask [..., Lk] one key to the right along its last axis: entry j takes
// entry j−1's value, and key 0 stays visible (false = not blocked).
func shiftRight(t *testing.T, m *tensors.Tensor) *tensors.Tensor {
	t.Helper()
	vals, err := tensors.CopyFlatData[bool](m)
	if err != nil {
		t.Fatalf("mask %s: %v", m.Shape(), err)
	}
	dims := m.Shape().Dimensions
	lk := dims[len(dims)-1]
	out := make([]bool, len(vals))
	for i := range vals {
		if i%lk != 0 {
			out[i] = vals[i-1]
		}
	}
	if slices.Equal(out, vals) {
		t.Fatalf("mask %s: shifting it changes nothing", m.Shape())
	}
	return tensors.FromFlatDataAndDimensions(out, dims...)
}
