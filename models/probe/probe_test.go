package probe

import (
	"math"
	"strings"
	"testing"

	"github.com/gomlx/gomlx/backends"
	. "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/tensors"
	"github.com/mhalab/mhalab/internal/backendtest"
)

func TestMain(m *testing.M) { backendtest.Main(m, "models/probe") }

// TestApply: on z [B=2, H=3, L=4, dk=2] filled with distinct values, zero-ablating head 1 of
// layer 1 and mean-ablating head 2 of layer 1 changes exactly those heads (to 0 and to the
// mean) and returns every other element bit for bit; layer 0 is untouched.
func TestApply(t *testing.T) {
	const layers, B, H, L, dk = 2, 2, 3, 4, 2
	z := make([]float32, B*H*L*dk)
	for i := range z {
		z[i] = float32(i) + 0.25
	}
	means := &Means{Layers: layers, Heads: H, Dim: dk, Data: make([]float32, layers*H*dk)}
	copy(means.At(Head{1, 2}), []float32{-7, 9})
	abl := Ablation{Heads: []Head{{1, 2}}, Mode: Mean, Means: means}
	zero := Ablation{Heads: []Head{{1, 1}}}
	backendtest.Run(t, func(t *testing.T, backend backends.Backend) {
		for _, c := range []struct {
			a     Ablation
			layer int
			head  int // the changed head, −1: none
			to    []float32
		}{{abl, 1, 2, []float32{-7, 9}}, {zero, 1, 1, []float32{0, 0}}, {abl, 0, -1, nil}} {
			keep, replace, err := c.a.Inputs(layers, H, dk)
			if err != nil {
				t.Fatal(err)
			}
			layer := c.layer
			got, err := ExecOnce(backend, func(z, k, r *Node) *Node { return Apply(z, k, r, layer) },
				tensors.FromFlatDataAndDimensions(z, B, H, L, dk), keep, replace)
			if err != nil {
				t.Fatal(err)
			}
			a, err := ArrayOf(got)
			if err != nil {
				t.Fatal(err)
			}
			for b := range B {
				for h := range H {
					for p := range L {
						want := z[((b*H+h)*L+p)*dk : ((b*H+h)*L+p+1)*dk]
						if h == c.head {
							want = c.to
						}
						for i, x := range a.Row(b, h, p) {
							if x != want[i] {
								t.Fatalf("%s, layer %d: z[%d, %d, %d, %d] = %g, want %g", c.a, layer, b, h, p, i, x, want[i])
							}
						}
					}
				}
			}
		}
	})
}

// TestMeanHeads: the mean over positions from … length−1 of each sequence, padding left out.
func TestMeanHeads(t *testing.T) {
	// One layer, B=2, H=1, L=3, dk=1: sequence 0 has 3 tokens (1, 2, 3), sequence 1 has 2 (10, 20, padding 999).
	tr := Trace{Heads: []Array{{Shape: []int{2, 1, 3, 1}, Data: []float32{1, 2, 3, 10, 20, 999}}}}
	for _, c := range []struct {
		from int
		want float64
	}{{0, (1 + 2 + 3 + 10 + 20) / 5.0}, {1, (2 + 3 + 20) / 3.0}} {
		m, err := MeanHeads(tr, []int{3, 2}, c.from)
		if err != nil {
			t.Fatal(err)
		}
		if got := float64(m.At(Head{0, 0})[0]); math.Abs(got-c.want) > 1e-6 {
			t.Errorf("MeanHeads from %d = %g, want %g", c.from, got, c.want)
		}
	}
	if _, err := MeanHeads(tr, []int{4, 2}, 0); err == nil || !strings.Contains(err.Error(), "length 4") {
		t.Errorf("a length above the padded length: err = %v", err)
	}
}

// TestAblationCheck: every bad ablation is one error naming what is wrong.
func TestAblationCheck(t *testing.T) {
	for _, c := range []struct {
		a    Ablation
		want string
	}{
		{Ablation{Heads: []Head{{6, 0}}}, "head L6H0 outside the model's 6 layers × 12 heads"},
		{Ablation{Heads: []Head{{0, -1}}}, "head L0H-1 outside"},
		{Ablation{Heads: []Head{{0, 1}}, Mode: Mean}, "mean-ablation needs Means"},
		{Ablation{Heads: []Head{{0, 1}}, Mode: Mean, Means: &Means{Layers: 1, Heads: 12, Dim: 32}}, "means are [1, 12, 32]"},
		{Ablation{Heads: []Head{{0, 1}}, Mode: 7}, "unknown ablation mode 7"},
	} {
		err := c.a.Check(6, 12, 32)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: err = %v, want one containing %q", c.a, err, c.want)
		}
	}
	if err := (Ablation{}).Check(6, 12, 32); err != nil {
		t.Errorf("no ablation: %v", err)
	}
}
