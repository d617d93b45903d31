package nb

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// Tick labels and cell values print round numbers as they are: 2500, not "3e+03"; 4, not "4.00".
func TestNumberLabels(t *testing.T) {
	for _, c := range []struct {
		v    float64
		want string
	}{
		{0, "0"}, {4, "4"}, {1024, "1024"}, {2500, "2500"}, {7500, "7500"}, {32768, "32768"},
		{0.25, "0.25"}, {0.5, "0.5"}, {1.5, "1.5"}, {0.333333, "0.33"}, {12.5, "12.5"},
		{-0.43, "-0.43"}, {1e6, "1e6"}, {2.5e6, "2.5e6"}, {1e-5, "1e-5"}, {0.0012, "0.0012"},
	} {
		if got := shortNum(c.v); got != c.want {
			t.Errorf("shortNum(%v) = %q, want %q", c.v, got, c.want)
		}
	}
}

// A signed matrix gets a diverging scale centred on 0: 0 is white, −m and +m are the two ends.
func TestSignedHeatmapIsCentredOnZero(t *testing.T) {
	h := Heatmap("signed", [][]float64{{-0.4, 0, 0.1}}, HeatmapOptions{Cell: 20})
	fills := regexp.MustCompile(`fill="(#[0-9a-f]{6})"><title>\[0,(\d)\]`).FindAllStringSubmatch(h, -1)
	if len(fills) != 3 {
		t.Fatalf("found %d cells, want 3", len(fills))
	}
	if fills[1][1] != "#ffffff" && fills[1][1] != "#f7f7f7" {
		t.Errorf("0 is drawn %s, want white (the centre of a diverging scale)", fills[1][1])
	}
	if !strings.Contains(h, ">0.4<") || !strings.Contains(h, ">-0.4<") {
		t.Errorf("the colour bar of a signed matrix should run from -0.4 to 0.4 (symmetric)")
	}
}

// Legends are never cut off: the picture is wide enough for the longest legend text.
func TestLegendsFit(t *testing.T) {
	long := "computed with the causal mask, and more words"
	g := BlockGrid("g", "r", "c", 1, 1, 20, 20, func(i, j int) Tile { return Tile{} }, map[string]string{"#fff": long})
	c := LineChart("c", "x", "y", false, false, Series{Name: long, X: []float64{1, 2}, Y: []float64{1, 2}})
	for what, svg := range map[string]string{"BlockGrid": g, "LineChart": c} {
		width := svgWidth(t, svg)
		m := regexp.MustCompile(`<text x="(\d+)" y="\d+">` + regexp.QuoteMeta(long)).FindStringSubmatch(svg)
		if m == nil {
			t.Fatalf("%s: legend text not found", what)
		}
		x, _ := strconv.Atoi(m[1])
		if end := x + textWidth(long); end > width {
			t.Errorf("%s: legend ends at %d px, the picture is %d px wide", what, end, width)
		}
	}
}

func svgWidth(t *testing.T, svg string) int {
	m := regexp.MustCompile(`<svg [^>]*width="(\d+)"`).FindStringSubmatch(svg)
	if m == nil {
		t.Fatal("no svg width")
	}
	w, _ := strconv.Atoi(m[1])
	return w
}

// Linear axes get round ticks: multiples of 1, 2 or 5 × 10ᵏ.
func TestNiceTicks(t *testing.T) {
	got := niceTicks(0, 10693)
	want := []float64{0, 2000, 4000, 6000, 8000, 10000}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("niceTicks(0, 10693) = %v, want %v", got, want)
	}
	if got := niceTicks(0.13, 0.52); fmt.Sprint(got) != "[0.2 0.3 0.4 0.5]" {
		t.Errorf("niceTicks(0.13, 0.52) = %v", got)
	}
}

// Every row and column of a heatmap is labelled, however small the cells: token labels are
// never thinned out (they are rotated and shrunk instead).
func TestHeatmapLabelsEveryToken(t *testing.T) {
	const n = 32
	m := make([][]float64, n)
	tokens := make([]string, n)
	for i := range m {
		m[i] = make([]float64, n)
		tokens[i] = fmt.Sprintf("tok%02d", i)
	}
	svg := Heatmap("32 tokens", m, HeatmapOptions{Cell: 6, Rows: tokens, Cols: tokens})
	for _, tok := range tokens {
		if c := strings.Count(svg, ">"+tok+"<"); c != 2 {
			t.Errorf("token %s is labelled %d times, want 2 (its row and its column)", tok, c)
		}
	}
	if !strings.Contains(svg, "rotate(-60") {
		t.Error("column labels wider than their 6 px cells are not rotated")
	}
	idx := Heatmap("indices", m, HeatmapOptions{Cell: 6})
	if !strings.Contains(idx, ">31<") || !strings.Contains(idx, ">17<") {
		t.Error("index labels are thinned out")
	}
}

// A block grid shows the index of every row and column.
func TestBlockGridHasIndices(t *testing.T) {
	svg := BlockGrid("grid", "row", "col", 3, 12, 20, 20, func(i, j int) Tile { return Tile{} }, nil)
	for _, idx := range []string{">0<", ">2<", ">11<"} {
		if !strings.Contains(svg, idx) {
			t.Errorf("the grid has no index label %s", idx)
		}
	}
}
