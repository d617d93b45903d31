package nb_test

import (
	"io"
	"math"
	"os"
	"strings"
	"testing"

	"github.com/gomlx/gomlx/backends/simplego"
	. "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/tensors"
	"github.com/gomlx/gomlx/pkg/ml/context"
	"github.com/mhalab/mhalab/notebooks/nb"
)

func TestDiffSaysWhatDiffers(t *testing.T) {
	want := tensors.FromValue([][]float32{{1, 2, 3}, {4, 5, 6}})
	for _, c := range []struct {
		name string
		got  *tensors.Tensor
		says []string
	}{
		{"same", tensors.FromValue([][]float32{{1, 2, 3}, {4, 5, 6}}), nil},
		{"nil", nil, []string{"got nothing (nil), expected shape [2 3]"}},
		{"shape", tensors.FromValue([][]float32{{1, 2}, {3, 4}, {5, 6}}),
			[]string{"expected shape [2 3], got [3 2]"}},
		{"values", tensors.FromValue([][]float32{{1, 2, 3}, {4, 7, 9}}), []string{"the values differ",
			"first difference at index [1 1]: expected 5, got 7", "2 of 6 elements differ"}},
		{"NaN", tensors.FromValue([][]float32{{1, 2, 3}, {4, 5, float32(math.NaN())}}),
			[]string{"index [1 2]", "not a finite match"}},
	} {
		d := nb.Diff(c.got, want, 1e-6)
		if (d == "") != (c.says == nil) {
			t.Errorf("%s: Diff = %q", c.name, d)
		}
		for _, s := range c.says {
			if !strings.Contains(d, s) {
				t.Errorf("%s: Diff = %q, want it to say %q", c.name, d, s)
			}
		}
	}
}

// printed returns what fn printed on standard output.
func printed(t *testing.T, fn func()) string {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout := os.Stdout
	os.Stdout = w
	defer func() { os.Stdout = stdout }()
	fn()
	w.Close()
	out, _ := io.ReadAll(r)
	return string(out)
}

// The three states of an exercise, through a real graph: the stub (which panics with
// nb.WriteMe while the graph is built), a wrong answer and a right one.
func TestTryTellsStubWrongAndRight(t *testing.T) {
	backend, err := simplego.New("")
	if err != nil {
		t.Fatal(err)
	}
	x := tensors.FromValue([]float32{1, 2, 3})
	want := tensors.FromValue([]float32{2, 4, 6})
	run := func(double func(x *Node) *Node) func() *tensors.Tensor {
		return func() *tensors.Tensor {
			fn := func(ctx *context.Context, x *Node) *Node { return double(x) }
			return nb.Must1(context.ExecOnce(backend, context.New(), fn, x))
		}
	}
	stub := run(func(x *Node) *Node { panic(nb.WriteMe) })
	wrong := run(func(x *Node) *Node { return AddScalar(x, 1) })
	right := run(func(x *Node) *Node { return MulScalar(x, 2) })
	for _, c := range []struct {
		name  string
		yours func() *tensors.Tensor
		ok    bool
		says  string
	}{
		{"stub", stub, false, "… not solved yet — double it"},
		{"wrong", wrong, false, "✗ 2x: the values differ\n  first difference at index [1]: expected 4, got 3"},
		{"right", right, true, "✓ 2x: matches, shape [3]"},
	} {
		var ok bool
		out := printed(t, func() { ok = nb.Try("2x", "double it", c.yours, want, 1e-6) })
		if ok != c.ok || !strings.HasPrefix(out, c.says) {
			t.Errorf("%s: Try = %v, printed %q; want %v, %q…", c.name, ok, out, c.ok, c.says)
		}
	}
	for _, c := range []struct {
		name  string
		yours func() *tensors.Tensor
		panic string
	}{{"stub", stub, "still panics with nb.WriteMe"}, {"wrong", wrong, "the values differ"}} {
		func() {
			defer func() {
				err, _ := recover().(error)
				if err == nil || !strings.Contains(err.Error(), c.panic) {
					t.Errorf("Solved(%s) panicked with %v, want an error saying %q", c.name, err, c.panic)
				}
			}()
			printed(t, func() { nb.Solved("2x", c.yours, want, 1e-6) })
		}()
	}
	if out := printed(t, func() { nb.Solved("2x", right, want, 1e-6) }); !strings.HasPrefix(out, "✓ 2x") {
		t.Errorf("Solved(right) printed %q", out)
	}
}
