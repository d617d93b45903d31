package mhalib_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/gomlx/gomlx/backends"
	gomlxxla "github.com/gomlx/gomlx/backends/xla"
	"github.com/gomlx/gomlx/pkg/core/dtypes"
	"github.com/gomlx/gomlx/pkg/core/shapes"
	"github.com/gomlx/gomlx/pkg/core/tensors"
	"github.com/gomlx/gomlx/pkg/ml/context"

	"github.com/mhalab/mhalab/internal/backendtest"
	"github.com/mhalab/mhalab/internal/testenv"
	"github.com/mhalab/mhalab/mhalib"
	"github.com/mhalab/mhalab/xla"
)

// TestProgramCompilesOncePerShape counts graph builds (configure runs once per build): a
// Program compiles at its first Run of a shape and reuses the executable afterwards; a new shape
// compiles once more; the one-call Forward compiles at every call.
func TestProgramCompilesOncePerShape(t *testing.T) {
	backendtest.Run(t, func(t *testing.T, backend backends.Backend) {
		builds := 0
		configure := func(b *mhalib.MHABuilder) {
			builds++
			b.Causal(mhalib.CausalTopLeft)
		}
		ctx := context.New()
		ctx.SetRNGStateFromSeed(1)
		x := tensors.FromValue([][][]float32{{{1, 0, 0, 1}, {0, 1, 1, 0}, {1, 1, 0, 0}}})                    // [1, 3, 4]
		y := tensors.FromValue([][][]float32{{{0, 1, 0, 1}, {1, 0, 1, 0}, {0, 0, 1, 1}}})                    // [1, 3, 4]
		longer := tensors.FromValue([][][]float32{{{1, 0, 0, 1}, {0, 1, 1, 0}, {1, 1, 0, 0}, {0, 0, 0, 1}}}) // [1, 4, 4]

		p, err := mhalib.NewProgram(backend, ctx, 2, configure)
		if err != nil {
			t.Fatal(err)
		}
		defer p.Finalize()
		first, _, err := p.Run(x, x, x)
		if err != nil {
			t.Fatal(err)
		}
		for _, in := range []*tensors.Tensor{y, x, y} {
			if _, _, err := p.Run(in, in, in); err != nil {
				t.Fatal(err)
			}
		}
		if builds != 1 || p.Compilations() != 1 {
			t.Errorf("4 runs of one shape: %d graph builds (Compilations %d), want 1", builds, p.Compilations())
		}
		again, _, err := p.Run(x, x, x)
		if err != nil {
			t.Fatal(err)
		}
		if !first.Equal(again) {
			t.Errorf("the reused executable gives %v, the first run %v", again, first)
		}
		if _, _, err := p.Run(longer, longer, longer); err != nil {
			t.Fatal(err)
		}
		if builds != 2 || p.Compilations() != 2 {
			t.Errorf("a second shape: %d graph builds (Compilations %d), want 2", builds, p.Compilations())
		}

		// Forward, the one-call convenience, builds a Program per call: two calls, two builds.
		builds = 0
		for range 2 {
			out, _, err := mhalib.Forward(backend, ctx, x, x, x, 2, configure)
			if err != nil {
				t.Fatal(err)
			}
			if !out.Equal(first) {
				t.Errorf("Forward gives %v, the Program %v", out, first)
			}
		}
		if builds != 2 {
			t.Errorf("2 Forward calls: %d graph builds, want 2", builds)
		}
	})
}

// A Program reports bad input, a bad configuration and use after Finalize as errors.
func TestProgramErrors(t *testing.T) {
	backend := goBackend()
	if _, err := mhalib.NewProgram(nil, context.New(), 2, nil); !errors.Is(err, mhalib.ErrInvalidArgument) {
		t.Errorf("NewProgram(nil backend): %v", err)
	}
	p, err := mhalib.NewProgram(backend, context.New(), 3, nil)
	if err != nil {
		t.Fatal(err)
	}
	x := tensors.FromShape(shapes.Make(dtypes.Float32, 1, 2, 4))
	if _, _, err := p.Run(x, x, x); !errors.Is(err, mhalib.ErrInvalidArgument) {
		t.Errorf("3 heads for E=4: %v", err)
	}
	if _, _, err := p.Run(x, nil, x); !errors.Is(err, mhalib.ErrInvalidArgument) {
		t.Errorf("nil key: %v", err)
	}
	p.Finalize()
	if _, _, err := p.Run(x, x, x); !errors.Is(err, mhalib.ErrInvalidArgument) {
		t.Errorf("Run after Finalize: %v", err)
	}
}

// TestProgramRunRejectsEmptyTensors: a query, key or value with no elements comes back as an
// ArgumentError before anything is copied to the device — on every backend, and on an xla:cpu
// backend without shared buffers, whose host-to-device copy is the one xla:cuda makes (go-xla
// v0.1.4 panicked there: "reflect: slice index out of range", found on an H200).
func TestProgramRunRejectsEmptyTensors(t *testing.T) {
	check := func(t *testing.T, backend backends.Backend) {
		p, err := mhalib.NewProgram(backend, context.New(), 2, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer p.Finalize()
		f64 := func(dims ...int) *tensors.Tensor { return tensors.FromShape(shapes.Make(dtypes.Float64, dims...)) }
		x, kv := f64(2, 3, 8), f64(2, 4, 8)
		for _, c := range []struct {
			name    string
			q, k, v *tensors.Tensor
			want    string
		}{
			{"Lq = 0", f64(2, 0, 8), kv, kv, "query: shape (Float64)[2 0 8]: Lq = 0"},
			{"Lk = 0", x, f64(2, 0, 8), f64(2, 0, 8), "key: shape (Float64)[2 0 8]: Lk = 0"},
			{"B = 0", f64(0, 3, 8), f64(0, 4, 8), f64(0, 4, 8), "query: shape (Float64)[0 3 8] has no elements"},
		} {
			t.Run(c.name, func(t *testing.T) {
				_, _, err := p.Run(c.q, c.k, c.v)
				if err == nil || !errors.Is(err, mhalib.ErrInvalidArgument) || !strings.Contains(err.Error(), c.want) {
					t.Errorf("Run: err = %v, want an ErrInvalidArgument saying %q", err, c.want)
				}
			})
		}
	}
	backendtest.Run(t, check)
	t.Run("xla:cpu noshared_buffers", func(t *testing.T) {
		path, err := xla.FindPlugin("cpu")
		if err != nil {
			testenv.RequireOrSkip(t, err.Error())
			return
		}
		backend, err := gomlxxla.NewWithOptions(path+",noshared_buffers", nil)
		if err != nil {
			t.Fatal(err)
		}
		defer xla.Close(backend)
		check(t, backend)
	})
}
