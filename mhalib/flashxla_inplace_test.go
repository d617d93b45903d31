package mhalib

import (
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gomlx/gomlx/backends"
	"github.com/gomlx/gomlx/pkg/core/dtypes"
	"github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/shapes"
	"github.com/gomlx/gomlx/pkg/core/tensors"
	"github.com/gomlx/gomlx/pkg/ml/context"
	"github.com/mhalab/mhalab/internal/backendtest"
)

// TestFlashFinishInPlaceIsBitwise: writing finished rows in place (flashRows.inPlace) gives the
// output and log-sum-exp bit for bit what concatenating them gives, causal (rows finish one query
// block at a time), with a sliding window (independent chains on XLA) and with sinks.
func TestFlashFinishInPlaceIsBitwise(t *testing.T) {
	backendtest.Run(t, func(t *testing.T, backend backends.Backend) {
		const B, h, L, d = 2, 4, 37, 8
		x := normalTensor(29, B, h, L, d) // [B, h, L, d]
		for _, c := range []struct {
			name   string
			window *Window
			sinks  bool
		}{{"causal", nil, false}, {"window", &Window{Left: 9, Right: -1}, false}, {"sinks", nil, true}} {
			build := func(inPlace bool) []*tensors.Tensor {
				flashFinishInPlace = inPlace
				defer func() { flashFinishInPlace = true }()
				return graph.MustExecOnceN(backend, func(x *graph.Node) []*graph.Node {
					q, k, v := x, graph.MulScalar(x, 0.7), graph.Neg(x)
					ms := newMaskSet(B, h, L, L, dtypes.Float32, Mask{}, "mask", Mask{}, "key padding mask", CausalTopLeft, math.Inf(-1))
					var sinks *graph.Node
					if c.sinks {
						sinks = graph.Const(x.Graph(), []float32{0.5, -1, 2, 0})
					}
					ms.setModern(c.window, nil, 0, sinks, dtypes.Float32)
					o, l := flashAttend(q, k, v, 0.3, ms, 8, 5, true)
					return []*graph.Node{o, l}
				}, x)
			}
			concat, inPlace := build(false), build(true)
			for i, what := range []string{"output", "lse"} {
				want, got := tensors.MustCopyFlatData[float32](concat[i]), tensors.MustCopyFlatData[float32](inPlace[i])
				for j := range want {
					if math.Float32bits(got[j]) != math.Float32bits(want[j]) {
						t.Fatalf("%s: %s[%d] = %v in place, %v concatenated", c.name, what, j, got[j], want[j])
					}
				}
			}
		}
	})
}

// TestFlashFinishInPlaceAB is the in-process A/B of flashxla.go's note "XLA's block of
// temporaries": MultiHeadAttention with Flash and a causal mask (B, L, E, H from
// $MHALAB_FLASH_AB_SHAPE, "1,4096,512,8" by default) built with finished rows concatenated and
// written in place, executions alternated (rotating which goes first) for $MHALAB_FLASH_AB_ROUNDS
// rounds (20), medians of wall time, process CPU time and minor page faults logged. It checks
// nothing about speed (mhalab bench does); it runs only when $MHALAB_FLASH_AB=1, on xla:cpu.
func TestFlashFinishInPlaceAB(t *testing.T) {
	if os.Getenv("MHALAB_FLASH_AB") != "1" {
		t.Skip("MHALAB_FLASH_AB=1 runs the A/B")
	}
	backend, err := backendtest.Get("xla:cpu")
	if err != nil {
		t.Skip(err)
	}
	dims := []int{1, 4096, 512, 8}
	if s := os.Getenv("MHALAB_FLASH_AB_SHAPE"); s != "" {
		dims = abInts(t, s)
	}
	rounds := 20
	if s := os.Getenv("MHALAB_FLASH_AB_ROUNDS"); s != "" {
		rounds = abInts(t, s)[0]
	}
	B, L, E, H := dims[0], dims[1], dims[2], dims[3]
	x := tensors.FromShape(shapes.Make(dtypes.Float32, B, L, E))
	type arm struct {
		name            string
		exec            *context.Exec
		wall, cpu, flts []float64
	}
	arms := []*arm{{name: "concatenated"}, {name: "in place"}}
	for i, a := range arms {
		ctx := WithInit(context.New(), InitXavierUniform)
		ctx.SetParam(context.ParamInitialSeed, int64(1))
		flashFinishInPlace = i == 1
		a.exec, err = context.NewExec(backend, ctx, func(ctx *context.Context, x *graph.Node) *graph.Node {
			return MultiHeadAttention(ctx, x, x, x, H).Causal(CausalTopLeft).Formulation(Flash).Done() // [B, L, E]
		})
		if err == nil {
			err = a.exec.PreCompile(x)
		}
		flashFinishInPlace = true
		if err != nil {
			t.Fatal(err)
		}
		for range 2 {
			abExec(t, a.exec, x)
		}
	}
	for round := range rounds {
		for j := range arms {
			a := arms[(round+j)%len(arms)]
			c0, f0 := abRusage()
			t0 := time.Now()
			abExec(t, a.exec, x)
			wall := time.Since(t0)
			c1, f1 := abRusage()
			a.wall = append(a.wall, float64(wall.Microseconds())/1000)
			a.cpu = append(a.cpu, float64((c1-c0).Microseconds())/1000)
			a.flts = append(a.flts, float64(f1-f0))
		}
	}
	median := func(s []float64) float64 { s = slices.Clone(s); slices.Sort(s); return s[len(s)/2] }
	for _, a := range arms {
		t.Logf("B%d L%d E%d h%d %-12s wall median %.1f ms (min %.1f), CPU median %.1f ms, minor faults median %.0f",
			B, L, E, H, a.name, median(a.wall), slices.Min(a.wall), median(a.cpu), median(a.flts))
	}
}

// abInts parses comma-separated integers.
func abInts(t *testing.T, s string) []int {
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(f)
		if err != nil {
			t.Fatalf("%q: %v", s, err)
		}
		out = append(out, n)
	}
	return out
}

// abExec executes exec on x and frees the outputs.
func abExec(t *testing.T, exec *context.Exec, x *tensors.Tensor) {
	out, err := exec.Exec(x)
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range out {
		o.FinalizeAll()
	}
}

// abRusage returns the process's CPU time (all threads) and minor page faults so far.
func abRusage() (cpu time.Duration, minflt int64) {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), ru.Minflt
}
