package parallel_test

import (
	"math"
	"math/rand/v2"
	"os"
	"sync"
	"testing"

	"github.com/gomlx/gomlx/backends"
	. "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/tensors"

	"github.com/mhalab/mhalab/internal/testenv"
	"github.com/mhalab/mhalab/mhalib/parallel"
	"github.com/mhalab/mhalab/xla"
)

// deviceCounts are the meshes every test runs on; one backend of maxDevices virtual CPU
// devices serves them all (an XLA CPU client reserves ~2.45 GiB of address space: one only).
var deviceCounts = []int{1, 2, 4, 8}

const maxDevices = 8

var (
	backendOnce sync.Once
	backendErr  error
	shared      backends.Backend
)

// cpuDevices returns the shared xla:cpu backend of maxDevices devices, or skips (fails in CI)
// when the plugin is missing.
func cpuDevices(t *testing.T) backends.Backend {
	t.Helper()
	backendOnce.Do(func() {
		if _, err := xla.FindPlugin("cpu"); err != nil {
			backendErr = err
			return
		}
		shared, _, backendErr = xla.NewWithDevices(xla.SpecCPU, maxDevices)
	})
	if backendErr != nil {
		testenv.RequireOrSkip(t, "xla:cpu with several devices: "+backendErr.Error())
	}
	return shared
}

// hloDumpErr is what xla.EnableHLODump returned in TestMain, before the first XLA backend.
var hloDumpErr error

func TestMain(m *testing.M) {
	hloDumpErr = xla.EnableHLODump()
	os.Exit(m.Run())
}

// u is float32's unit roundoff.
const u = 0x1p-24

// bound is the error model for two float32 computations of the same values that differ only in
// the order of their sums: each is within n·u·Σ|terms| of the exact value for a sum of n terms
// (the first-order bound of a dot product of length n), so they are within twice that of each
// other. Σ|terms| is bounded here by scale·(1 + max|want|), scale covering the growth through the
// softmax and projections of these small, O(1) tests.
func bound(n int, want []float32, scale float64) float64 {
	m := 0.0
	for _, x := range want {
		m = math.Max(m, math.Abs(float64(x)))
	}
	return 2 * float64(n) * u * scale * (1 + m)
}

// assertNear fails when max |got − want| exceeds tol, and reports the ratio to tol.
func assertNear(t *testing.T, what string, got, want *tensors.Tensor, tol float64) {
	t.Helper()
	if !got.Shape().Equal(want.Shape()) {
		t.Fatalf("%s: shape %s, want %s", what, got.Shape(), want.Shape())
	}
	g, w := tensors.MustCopyFlatData[float32](got), tensors.MustCopyFlatData[float32](want)
	d := maxDiff(g, w)
	if !(d <= tol) {
		t.Errorf("%s: max |Δ| = %.3g > bound %.3g", what, d, tol)
	} else {
		t.Logf("%s: max |Δ| = %.3g (bound %.3g)", what, d, tol)
	}
}

func maxDiff(a, b []float32) float64 {
	d := 0.0
	for i := range a {
		d = math.Max(d, math.Abs(float64(a[i])-float64(b[i])))
	}
	return d
}

func flat(t *tensors.Tensor) []float32 { return tensors.MustCopyFlatData[float32](t) }

// randTensor is a float32 tensor of uniform values in [−1, 1) from rng.
func randTensor(rng *rand.Rand, dims ...int) *tensors.Tensor {
	n := 1
	for _, d := range dims {
		n *= d
	}
	data := make([]float32, n)
	for i := range data {
		data[i] = float32(2*rng.Float64() - 1)
	}
	return tensors.FromFlatDataAndDimensions(data, dims...)
}

// execOnce runs fn once on one device of backend.
func execOnce(t *testing.T, backend backends.Backend, fn func([]*Node) []*Node, inputs ...*tensors.Tensor) []*tensors.Tensor {
	t.Helper()
	r, err := parallel.NewRunner(backend, 1, fn)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Finalize()
	out, err := r.Run([][]*tensors.Tensor{inputs})
	if err != nil {
		t.Fatal(err)
	}
	return out[0]
}

// gather joins output i of every device along axis: the whole of a sharded result.
func gather(t *testing.T, out [][]*tensors.Tensor, i, axis int) *tensors.Tensor {
	t.Helper()
	var s []*tensors.Tensor
	for dev := range out {
		s = append(s, out[dev][i])
	}
	j, err := parallel.Join(s, axis)
	if err != nil {
		t.Fatal(err)
	}
	return j
}
