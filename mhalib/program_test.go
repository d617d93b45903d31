package mhalib_test

import (
	"errors"
	"testing"

	"github.com/gomlx/gomlx/backends"
	"github.com/gomlx/gomlx/pkg/core/dtypes"
	"github.com/gomlx/gomlx/pkg/core/shapes"
	"github.com/gomlx/gomlx/pkg/core/tensors"
	"github.com/gomlx/gomlx/pkg/ml/context"

	"github.com/mhalab/mhalab/internal/backendtest"
	"github.com/mhalab/mhalab/mhalib"
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
