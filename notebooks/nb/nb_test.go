package nb_test

import (
	"encoding/xml"
	"errors"
	"io"
	"math"
	"strings"
	"testing"

	"github.com/gomlx/gomlx/pkg/core/dtypes"
	"github.com/gomlx/gomlx/pkg/core/shapes"
	"github.com/gomlx/gomlx/pkg/core/tensors"
	"github.com/gomlx/gomlx/pkg/ml/context"
	"github.com/mhalab/mhalab/mhalib"
	"github.com/mhalab/mhalab/notebooks/nb"
)

// wellFormed fails the test unless s parses as XML (SVG is XML; the HTML of Table too).
func wellFormed(t *testing.T, what, s string) {
	t.Helper()
	d := xml.NewDecoder(strings.NewReader(s))
	for {
		_, err := d.Token()
		if err == io.EOF {
			return
		}
		if err != nil {
			t.Fatalf("%s is not well-formed XML: %v\n%.400s", what, err, s)
		}
	}
}

func TestCheckPanicsWithAnError(t *testing.T) {
	defer func() {
		r := recover()
		err, ok := r.(error)
		if !ok || !strings.Contains(err.Error(), "check failed: 1 + 1 = 3") {
			t.Fatalf("Check(false) panicked with %#v, want an error naming the check", r)
		}
	}()
	nb.Check(true, "fine")
	nb.Check(false, "1 + 1 = %d", 3)
	t.Fatal("Check(false) did not panic")
}

func TestMustPanicsWithTheError(t *testing.T) {
	sentinel := errors.New("boom")
	defer func() {
		if err, ok := recover().(error); !ok || !errors.Is(err, sentinel) {
			t.Fatalf("Must panicked with %v, want the error", err)
		}
	}()
	nb.Must1(3, sentinel)
}

func TestMaxAbsDiffAndMatrix(t *testing.T) {
	a := tensors.FromValue([][]float32{{1, 2}, {3, float32(math.Inf(-1))}})
	b := tensors.FromValue([][]float32{{1, 2.5}, {3, float32(math.Inf(-1))}})
	if d := nb.MaxAbsDiff(a, b); d != 0.5 {
		t.Errorf("MaxAbsDiff = %v, want 0.5 (equal infinities count as equal)", d)
	}
	if d := nb.MaxAbsDiffFloats([]float64{math.NaN()}, []float64{0}); !math.IsNaN(d) {
		t.Errorf("MaxAbsDiffFloats with NaN = %v, want NaN", d)
	}
	w := tensors.FromValue([][][]float64{{{1, 2}, {3, 4}}, {{5, 6}, {7, 8}}}) // [2, 2, 2]
	if m := nb.Matrix(w, 1); m[1][0] != 7 || len(m) != 2 || len(m[0]) != 2 {
		t.Errorf("Matrix(w, 1) = %v, want [[5 6] [7 8]]", m)
	}
}

func TestBackendHonoursGOMLX_BACKEND(t *testing.T) {
	t.Setenv("GOMLX_BACKEND", "go")
	if name := nb.Backend().Name(); !strings.Contains(name, "go") {
		t.Errorf("Backend() with GOMLX_BACKEND=go is %q", name)
	}
	if r := nb.BackendReason(); !strings.HasPrefix(r, "go ") {
		t.Errorf("BackendReason() = %q", r)
	}
}

func TestAllocBytesSeesAnAllocation(t *testing.T) {
	var keep []byte
	n := nb.AllocBytes(func() { keep = make([]byte, 1<<20) })
	if n < 1<<20 || n > 2<<20 {
		t.Errorf("AllocBytes of a 1 MiB make = %d", n)
	}
	_ = keep
	if s := nb.Bytes(uint64(3 << 20)); s != "3.00 MiB" {
		t.Errorf("Bytes = %q", s)
	}
}

func TestPicturesAreWellFormed(t *testing.T) {
	m := [][]float64{{0.1, 0.9, math.Inf(-1)}, {0.5, 0.5, math.NaN()}}
	h := nb.Heatmap("w <&>", m, nb.HeatmapOptions{Unit: true, Values: true, Cell: 30, RowLabel: "query", ColLabel: "key"})
	wellFormed(t, "Heatmap", h)
	if !strings.Contains(h, "−inf") || !strings.Contains(h, "NaN") || !strings.Contains(h, "w &lt;&amp;&gt;") {
		t.Errorf("Heatmap lacks the −inf cell, the NaN cell or the escaped title")
	}
	if n := strings.Count(h, "<rect"); n < 6 {
		t.Errorf("Heatmap has %d rects, want ≥ 6 cells", n)
	}
	c := nb.LineChart("t", "L", "bytes", true, true,
		nb.Series{Name: "plain", X: []float64{64, 128, 256}, Y: []float64{1, 4, 16}},
		nb.Series{Name: "flash", X: []float64{64, 128, 256}, Y: []float64{0, 2, 4}}) // 0 skipped on a log axis
	wellFormed(t, "LineChart", c)
	if strings.Count(c, "<circle") != 5 {
		t.Errorf("LineChart draws %d points, want 5 (the non-positive value is skipped on a log axis)", strings.Count(c, "<circle"))
	}
	d := nb.Diagram("flow", []nb.Box{{Label: "x", Note: "[B, L, E]"}}, []nb.Box{{Label: "q"}, {Label: "k"}, {Label: "v"}}, []nb.Box{{Label: "SDPA"}})
	wellFormed(t, "Diagram", d)
	if n := strings.Count(d, "<line"); n != 6 {
		t.Errorf("Diagram has %d arrows, want 3 (fan-out) + 3 (fan-in)", n)
	}
	g := nb.BlockGrid("tiles", "q", "k", 2, 3, 20, 20, func(i, j int) nb.Tile {
		if j > i {
			return nb.Tile{Colour: "#eee", Label: "skip"}
		}
		return nb.Tile{Colour: "#08c", Label: "✓"}
	}, map[string]string{"#eee": "skipped", "#08c": "computed"})
	wellFormed(t, "BlockGrid", g)
	wellFormed(t, "Table", nb.Table([]string{"a", "b"}, [][]string{{"1", "<2>"}}))
	wellFormed(t, "Row", nb.Row(h, c))
}

func TestModernPictures(t *testing.T) {
	g := nb.GQAGroups(8, 2)
	wellFormed(t, "GQAGroups", g)
	if n := strings.Count(g, `fill="#3182bd"`); n != 8+1 { // one tile per query head, one legend swatch
		t.Errorf("GQAGroups(8, 2) colours %d rects, want 9", n)
	}
	w := &mhalib.Window{Left: 3, Align: mhalib.AlignTopLeft}
	tiles, err := mhalib.FlashTiles(16, 16, 4, 4, mhalib.CausalTopLeft, w)
	if err != nil {
		t.Fatal(err)
	}
	pic, n := nb.FlashTileGrid("window", tiles, 16, 16, 4, 4, func(i, j int) bool { return j <= i && j >= i-3 })
	wellFormed(t, "FlashTileGrid", pic)
	if n != 7 { // the 4 diagonal cells and the 3 just before them
		t.Errorf("FlashTileGrid: %d cells computed, want 7", n)
	}
}

func TestModernHelpers(t *testing.T) {
	ctx := context.New()
	ctx.In("layer").In("kv_cache").VariableWithValue("k", tensors.FromShape(shapes.Make(dtypes.Float32, 1, 2, 8, 4)))
	ctx.In("layer").VariableWithValue("w", tensors.FromShape(shapes.Make(dtypes.Float32, 100)))
	if n := nb.CacheBytes(ctx); n != 2*8*4*4 {
		t.Errorf("CacheBytes = %d, want 256 (the kv_cache variable only)", n)
	}
	w := [][]float64{{1, 0}, {0.5, 0.5}}
	r := nb.RenormaliseRows(w, func(i, j int) float64 { return float64(j + 1) })
	if r[1][0] != 1.0/3 || r[1][1] != 2.0/3 || r[0][0] != 1 {
		t.Errorf("RenormaliseRows = %v", r)
	}
	ratio, spread, sum, diff := nb.CausalRowStats([][]float64{{0.5, 0}, {0.125, 0.375}}, [][]float64{{1, 0}, {0.25, 0.75}})
	if ratio != 3 || spread != 0 || sum != 0.5 || diff != 0.5 {
		t.Errorf("CausalRowStats = %v %v %v %v, want 3 0 0.5 0.5", ratio, spread, sum, diff)
	}
}

func TestOwnershipPicture(t *testing.T) {
	svg := nb.Ownership("heads", "head", 2, 4, func(i int) int { return i / 2 })
	wellFormed(t, "Ownership", svg)
	for _, want := range []string{"device 0", "device 1", nb.DeviceColour(1)} {
		if !strings.Contains(svg, want) {
			t.Errorf("Ownership picture lacks %q", want)
		}
	}
}
