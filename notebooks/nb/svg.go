package nb

import (
	"fmt"
	"html"
	"math"
	"strconv"
	"strings"
)

// Pictures as SVG (and tables as HTML), returned as strings: show them in a notebook with
// gonbui.DisplayHTML. Sizes are in pixels.

const fontStyle = `font-family="sans-serif" font-size="11"`

func esc(s string) string { return html.EscapeString(s) }

// colour maps t ∈ [0, 1] to a sequential white → dark blue scale.
func colour(t float64) string {
	t = math.Max(0, math.Min(1, t))
	// Interpolate between three stops: #f7fbff, #6baed6, #08306b.
	type rgb struct{ r, g, b float64 }
	stops := []rgb{{247, 251, 255}, {107, 174, 214}, {8, 48, 107}}
	var a, b rgb
	var u float64
	if t < 0.5 {
		a, b, u = stops[0], stops[1], t/0.5
	} else {
		a, b, u = stops[1], stops[2], (t-0.5)/0.5
	}
	return fmt.Sprintf("#%02x%02x%02x", int(a.r+(b.r-a.r)*u), int(a.g+(b.g-a.g)*u), int(a.b+(b.b-a.b)*u))
}

// divergingColour maps t ∈ [0, 1] to a blue → white → red scale, white at t = 0.5 (value 0
// of a signed matrix).
func divergingColour(t float64) string {
	t = math.Max(0, math.Min(1, t))
	type rgb struct{ r, g, b float64 }
	stops := []rgb{{33, 102, 172}, {247, 247, 247}, {178, 24, 43}} // #2166ac, #f7f7f7, #b2182b
	var a, b rgb
	var u float64
	if t < 0.5 {
		a, b, u = stops[0], stops[1], t/0.5
	} else {
		a, b, u = stops[1], stops[2], (t-0.5)/0.5
	}
	return fmt.Sprintf("#%02x%02x%02x", int(a.r+(b.r-a.r)*u+0.5), int(a.g+(b.g-a.g)*u+0.5), int(a.b+(b.b-a.b)*u+0.5))
}

// HeatmapOptions configure Heatmap. The zero value is fine.
type HeatmapOptions struct {
	Cell     int     // pixels per cell (default: fits ~240 px, between 6 and 40)
	Min, Max float64 // colour range (default: the finite min and max of the data; 0..1 if Unit)
	// A range with both signs (signed data: weights, differences) gets a diverging blue–white–red
	// scale, symmetric around 0 and white at 0; otherwise the scale runs white → dark blue.
	Unit     bool     // colour range 0..1 (attention weights)
	Values   bool     // print each value in its cell (when cells are ≥ 24 px)
	RowLabel string   // label of the row axis (e.g. "query i")
	ColLabel string   // label of the column axis (e.g. "key j")
	Rows     []string // optional labels of the rows
	Cols     []string // optional labels of the columns
}

// Heatmap draws matrix m (rows × cols) as coloured cells with a title. −inf cells (masked
// logits) are drawn grey with a cross, NaN cells red.
func Heatmap(title string, m [][]float64, opt HeatmapOptions) string {
	rows := len(m)
	cols := 0
	if rows > 0 {
		cols = len(m[0])
	}
	cell := opt.Cell
	if cell == 0 {
		cell = max(6, min(40, 240/max(rows, cols, 1)))
	}
	lo, hi := opt.Min, opt.Max
	if opt.Unit {
		lo, hi = 0, 1
	} else if lo == 0 && hi == 0 {
		lo, hi = math.Inf(1), math.Inf(-1)
		for _, row := range m {
			for _, v := range row {
				if !math.IsInf(v, 0) && !math.IsNaN(v) {
					lo, hi = math.Min(lo, v), math.Max(hi, v)
				}
			}
		}
		if lo > hi {
			lo, hi = 0, 1
		}
	}
	paint := colour
	if !opt.Unit && lo < 0 && hi > 0 {
		m := math.Max(-lo, hi)
		lo, hi, paint = -m, m, divergingColour
	}
	signed := lo < 0 && hi > 0
	// Every row and column is labelled (never every 2nd): the font shrinks to the cell (down to
	// 6 px), and column labels wider than their cell are written rotated, upwards.
	rowLabels, colLabels := axisLabels(opt.Rows, rows), axisLabels(opt.Cols, cols)
	font := max(6, min(9, cell-1))
	charW := float64(font) * 0.6
	longest := func(labels []string) int {
		n := 0
		for _, l := range labels {
			n = max(n, len([]rune(l)))
		}
		return n
	}
	rotate := float64(longest(colLabels))*charW > float64(cell)
	left, top := max(34, int(float64(longest(rowLabels))*charW)+8), 34
	if rotate {
		top = 24 + int(float64(longest(colLabels))*charW*0.87) + 8
	}
	if opt.RowLabel != "" {
		left += 14
	}
	width, height := max(left+cols*cell+70, left+titleWidth(title)), top+rows*cell+24
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" %s>`, width, height, fontStyle)
	fmt.Fprintf(&b, `<text x="%d" y="14" font-weight="bold">%s</text>`, left, esc(title))
	for i, row := range m {
		for j, v := range row {
			x, y := left+j*cell, top+i*cell
			switch {
			case math.IsNaN(v):
				fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%d" height="%d" fill="#d62728"><title>[%d,%d] NaN</title></rect>`, x, y, cell, cell, i, j)
			case math.IsInf(v, -1):
				fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%d" height="%d" fill="#bbbbbb"><title>[%d,%d] −inf</title></rect>`, x, y, cell, cell, i, j)
				fmt.Fprintf(&b, `<path d="M%d %dL%d %dM%d %dL%d %d" stroke="#888" stroke-width="1"/>`, x, y, x+cell, y+cell, x+cell, y, x, y+cell)
			default:
				t := 0.5
				if hi > lo {
					t = (v - lo) / (hi - lo)
				}
				fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%d" height="%d" fill="%s"><title>[%d,%d] %.4g</title></rect>`, x, y, cell, cell, paint(t), i, j, v)
				if opt.Values && cell >= 24 {
					ink := "#000"
					if (!signed && t > 0.6) || (signed && math.Abs(t-0.5) > 0.35) {
						ink = "#fff"
					}
					fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="middle" font-size="9" fill="%s">%s</text>`, x+cell/2, y+cell/2+3, ink, shortNum(v))
				}
			}
		}
	}
	fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%d" height="%d" fill="none" stroke="#444"/>`, left, top, cols*cell, rows*cell)
	for i, label := range rowLabels {
		fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="end" font-size="%d">%s</text>`, left-3, top+i*cell+cell/2+font/3, font, esc(label))
	}
	for j, label := range colLabels {
		x := left + j*cell + cell/2
		if rotate {
			fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="start" font-size="%d" transform="rotate(-60 %d %d)">%s</text>`, x+font/3, top-4, font, x+font/3, top-4, esc(label))
		} else {
			fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="middle" font-size="%d">%s</text>`, x, top-4, font, esc(label))
		}
	}
	if opt.ColLabel != "" {
		fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="middle" font-style="italic">%s →</text>`, left+cols*cell/2, top+rows*cell+16, esc(opt.ColLabel))
	}
	if opt.RowLabel != "" {
		cx, cy := 10, top+rows*cell/2
		fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="middle" font-style="italic" transform="rotate(-90 %d %d)">%s →</text>`, cx, cy, cx, cy, esc(opt.RowLabel))
	}
	// Colour bar.
	bx := left + cols*cell + 12
	barH := max(rows*cell, 60)
	for k := 0; k < 20; k++ {
		fmt.Fprintf(&b, `<rect x="%d" y="%d" width="10" height="%d" fill="%s"/>`, bx, top+barH-(k+1)*barH/20, barH/20+1, paint(float64(k)/19))
	}
	fmt.Fprintf(&b, `<text x="%d" y="%d">%s</text>`, bx+13, top+8, shortNum(hi))
	fmt.Fprintf(&b, `<text x="%d" y="%d">%s</text>`, bx+13, top+barH, shortNum(lo))
	if signed {
		fmt.Fprintf(&b, `<text x="%d" y="%d">0</text>`, bx+13, top+barH/2+4)
	}
	b.WriteString(`</svg>`)
	return b.String()
}

// axisLabels returns n labels: the given ones, and the index for any not given.
func axisLabels(given []string, n int) []string {
	labels := make([]string, n)
	for i := range labels {
		labels[i] = fmt.Sprint(i)
		if i < len(given) {
			labels[i] = given[i]
		}
	}
	return labels
}

// titleWidth estimates the width in pixels of a bold 11 px title.
func titleWidth(title string) int { return 7*len([]rune(title)) + 10 }

// shortNum formats a tick label or a cell value briefly: whole numbers below 10⁵ as they are
// (4, 1024, 2500), others with 2 significant digits below 1 and 3 above (0.33, 12.5), and very
// large or small ones in a short exponent form (1e6, 2.5e6, 1e-5).
func shortNum(v float64) string {
	a := math.Abs(v)
	switch {
	case math.IsInf(v, -1):
		return "−inf"
	case math.IsInf(v, 1):
		return "inf"
	case math.IsNaN(v):
		return "NaN"
	case v == 0:
		return "0"
	case a < 1e5 && v == math.Trunc(v):
		return strconv.FormatInt(int64(v), 10)
	case a >= 1e5 || a < 1e-3:
		mant, exp, _ := strings.Cut(strconv.FormatFloat(v, 'e', 1, 64), "e") // "2.5", "+06"
		mant = strings.TrimSuffix(mant, ".0")
		sign := ""
		if exp[0] == '-' {
			sign = "-"
		}
		return mant + "e" + sign + strings.TrimLeft(exp[1:], "0")
	case a >= 1000:
		return strconv.FormatFloat(v, 'f', 0, 64)
	case a < 1:
		return strconv.FormatFloat(v, 'g', 2, 64)
	}
	return strconv.FormatFloat(v, 'g', 3, 64)
}

// Row lays out pictures (SVG or HTML strings) side by side.
func Row(pictures ...string) string {
	var b strings.Builder
	b.WriteString(`<div style="display:flex;flex-wrap:wrap;gap:12px;align-items:flex-start">`)
	for _, p := range pictures {
		b.WriteString(`<div>` + p + `</div>`)
	}
	b.WriteString(`</div>`)
	return b.String()
}

// Series is one line of a LineChart.
type Series struct {
	Name string
	X, Y []float64
}

// palette colours the series of a chart.
var palette = []string{"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b"}

// LineChart draws series as lines with markers, with axes from the data's range. With logX or
// logY the axis is logarithmic (base 2 for X, 10 for Y); non-positive values are then skipped.
func LineChart(title, xLabel, yLabel string, logX, logY bool, series ...Series) string {
	const h, left, top, bottom = 260, 64, 28, 40
	right := 130 // room for the legend: its longest name
	for _, s := range series {
		right = max(right, 36+textWidth(s.Name))
	}
	w := 330 + right
	fx := func(v float64) float64 {
		if logX {
			return math.Log2(v)
		}
		return v
	}
	fy := func(v float64) float64 {
		if logY {
			return math.Log10(v)
		}
		return v
	}
	ok := func(x, y float64) bool {
		return !math.IsNaN(x) && !math.IsNaN(y) && !math.IsInf(x, 0) && !math.IsInf(y, 0) && (!logX || x > 0) && (!logY || y > 0)
	}
	x0, x1, y0, y1 := math.Inf(1), math.Inf(-1), math.Inf(1), math.Inf(-1)
	for _, s := range series {
		for i := range s.X {
			if ok(s.X[i], s.Y[i]) {
				x0, x1 = math.Min(x0, fx(s.X[i])), math.Max(x1, fx(s.X[i]))
				y0, y1 = math.Min(y0, fy(s.Y[i])), math.Max(y1, fy(s.Y[i]))
			}
		}
	}
	if x0 > x1 {
		x0, x1, y0, y1 = 0, 1, 0, 1
	}
	if x1 == x0 {
		x1 = x0 + 1
	}
	if !logY && y0 > 0 && y0 < 0.5*y1 {
		y0 = 0 // start linear y axes at 0 when that loses little
	}
	if y1 == y0 {
		y1 = y0 + 1
	}
	pw, ph := float64(w-left-right), float64(h-top-bottom)
	px := func(v float64) float64 { return float64(left) + (fx(v)-x0)/(x1-x0)*pw }
	py := func(v float64) float64 { return float64(top) + ph - (fy(v)-y0)/(y1-y0)*ph }
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" %s>`, w, h, fontStyle)
	fmt.Fprintf(&b, `<text x="%d" y="16" font-weight="bold">%s</text>`, left, esc(title))
	fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%.0f" height="%.0f" fill="none" stroke="#444"/>`, left, top, pw, ph)
	// X ticks: the x values of the first series when there are few (typical for measured
	// sizes), else 5 evenly spaced. Y ticks: powers of 10 on a log axis, else 5 evenly spaced.
	var xticks, yticks []float64
	if len(series) > 0 && len(series[0].X) <= 8 {
		xticks = series[0].X
	} else if !logX {
		xticks = niceTicks(x0, x1)
	} else {
		for k := 0; k <= 4; k++ {
			xticks = append(xticks, math.Pow(2, x0+(x1-x0)*float64(k)/4))
		}
	}
	if logY {
		for e := math.Ceil(y0); e <= y1; e++ {
			yticks = append(yticks, math.Pow(10, e))
		}
	}
	if len(yticks) < 2 {
		yticks = yticks[:0]
		for k := 0; k <= 4; k++ {
			v := y0 + (y1-y0)*float64(k)/4
			if logY {
				v = math.Pow(10, v)
			}
			yticks = append(yticks, v)
		}
		if !logY {
			yticks = niceTicks(y0, y1)
		}
	}
	for _, xv := range xticks {
		if !logX || xv > 0 {
			fmt.Fprintf(&b, `<text x="%.1f" y="%d" text-anchor="middle" font-size="9">%s</text>`, px(xv), h-bottom+13, shortNum(xv))
		}
	}
	for _, yv := range yticks {
		fmt.Fprintf(&b, `<text x="%d" y="%.1f" text-anchor="end" font-size="9">%s</text>`, left-4, py(yv)+3, shortNum(yv))
		fmt.Fprintf(&b, `<line x1="%d" x2="%.0f" y1="%.1f" y2="%.1f" stroke="#eee"/>`, left+1, float64(left)+pw-1, py(yv), py(yv))
	}
	fmt.Fprintf(&b, `<text x="%.0f" y="%d" text-anchor="middle" font-style="italic">%s</text>`, float64(left)+pw/2, h-8, esc(xLabel))
	cy := top + int(ph)/2
	fmt.Fprintf(&b, `<text x="14" y="%d" text-anchor="middle" font-style="italic" transform="rotate(-90 14 %d)">%s</text>`, cy, cy, esc(yLabel))
	for si, s := range series {
		c := palette[si%len(palette)]
		var pts []string
		for i := range s.X {
			if ok(s.X[i], s.Y[i]) {
				pts = append(pts, fmt.Sprintf("%.1f,%.1f", px(s.X[i]), py(s.Y[i])))
				fmt.Fprintf(&b, `<circle cx="%.1f" cy="%.1f" r="2.5" fill="%s"><title>%s: (%g, %.4g)</title></circle>`, px(s.X[i]), py(s.Y[i]), c, esc(s.Name), s.X[i], s.Y[i])
			}
		}
		fmt.Fprintf(&b, `<polyline points="%s" fill="none" stroke="%s" stroke-width="1.5"/>`, strings.Join(pts, " "), c)
		ly := top + 10 + si*16
		fmt.Fprintf(&b, `<line x1="%d" x2="%d" y1="%d" y2="%d" stroke="%s" stroke-width="2"/>`, w-right+8, w-right+24, ly, ly, c)
		fmt.Fprintf(&b, `<text x="%d" y="%d">%s</text>`, w-right+28, ly+4, esc(s.Name))
	}
	b.WriteString(`</svg>`)
	return b.String()
}

// Box is one box of a Diagram: a label and, under it, a note (typically a shape).
type Box struct {
	Label, Note string
	Colour      string // fill (default light blue)
}

// Diagram draws a data-flow diagram: layers of boxes from top to bottom, with arrows from each
// box to the boxes of the next layer (box to box when both layers have as many boxes, else
// every box to every box).
func Diagram(title string, layers ...[]Box) string {
	const boxW, boxH, gapX, gapY, top = 150, 38, 18, 26, 28
	widest := 0
	for _, l := range layers {
		widest = max(widest, len(l))
	}
	w := max(widest*(boxW+gapX)+gapX, 260)
	h := top + len(layers)*(boxH+gapY)
	centre := func(layer, i int) (x, y float64) {
		n := len(layers[layer])
		rowW := n*boxW + (n-1)*gapX
		x0 := (w - rowW) / 2
		return float64(x0 + i*(boxW+gapX) + boxW/2), float64(top + layer*(boxH+gapY))
	}
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" %s>`, w, h, fontStyle)
	b.WriteString(`<defs><marker id="arr" markerWidth="8" markerHeight="8" refX="7" refY="4" orient="auto"><path d="M0,0 L8,4 L0,8 z" fill="#555"/></marker></defs>`)
	fmt.Fprintf(&b, `<text x="%d" y="16" font-weight="bold">%s</text>`, gapX, esc(title))
	for l := 0; l+1 < len(layers); l++ {
		from, to := layers[l], layers[l+1]
		for i := range from {
			for j := range to {
				if len(from) == len(to) && i != j {
					continue
				}
				x1, y1 := centre(l, i)
				x2, y2 := centre(l+1, j)
				fmt.Fprintf(&b, `<line x1="%.0f" y1="%.0f" x2="%.0f" y2="%.0f" stroke="#555" marker-end="url(#arr)"/>`, x1, y1+boxH, x2, y2-1)
			}
		}
	}
	for l, layer := range layers {
		for i, box := range layer {
			cx, y := centre(l, i)
			fill := box.Colour
			if fill == "" {
				fill = "#deebf7"
			}
			fmt.Fprintf(&b, `<rect x="%.0f" y="%.0f" width="%d" height="%d" rx="5" fill="%s" stroke="#3182bd"/>`, cx-boxW/2, y, boxW, boxH, fill)
			fmt.Fprintf(&b, `<text x="%.0f" y="%.0f" text-anchor="middle" font-weight="bold">%s</text>`, cx, y+15, esc(box.Label))
			fmt.Fprintf(&b, `<text x="%.0f" y="%.0f" text-anchor="middle" font-size="10" fill="#333">%s</text>`, cx, y+30, esc(box.Note))
		}
	}
	b.WriteString(`</svg>`)
	return b.String()
}

// Tile is one block of a BlockGrid.
type Tile struct {
	Colour string // fill; "" leaves the tile white
	Label  string // short text in the tile
}

// BlockGrid draws a rows × cols grid of tiles of cellW × cellH pixels, with a title, axis
// labels and a legend (colour → meaning). tile(i, j) gives each tile.
func BlockGrid(title, rowLabel, colLabel string, rows, cols, cellW, cellH int, tile func(i, j int) Tile, legend map[string]string) string {
	left, top := 40, 34
	legendW := 0
	for _, text := range legend {
		legendW = max(legendW, textWidth(text))
	}
	w := max(left+cols*cellW+40+legendW, left+titleWidth(title))
	h := max(top+rows*cellH+26, top+len(legend)*18+10)
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" %s>`, w, h, fontStyle)
	fmt.Fprintf(&b, `<text x="%d" y="14" font-weight="bold">%s</text>`, left, esc(title))
	for i := range rows {
		for j := range cols {
			t := tile(i, j)
			fill := t.Colour
			if fill == "" {
				fill = "#ffffff"
			}
			x, y := left+j*cellW, top+i*cellH
			fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%d" height="%d" fill="%s" stroke="#666"/>`, x, y, cellW, cellH, fill)
			if t.Label != "" {
				fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="middle" font-size="10">%s</text>`, x+cellW/2, y+cellH/2+4, esc(t.Label))
			}
		}
	}
	// Indices of the rows and columns (every one: a grid is read by its indices).
	for i := range rows {
		fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="end" font-size="9">%d</text>`, left-4, top+i*cellH+cellH/2+3, i)
	}
	for j := range cols {
		fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="middle" font-size="9">%d</text>`, left+j*cellW+cellW/2, top-4, j)
	}
	fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="middle" font-style="italic">%s →</text>`, left+cols*cellW/2, top+rows*cellH+16, esc(colLabel))
	cx, cy := 12, top+rows*cellH/2
	fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="middle" font-style="italic" transform="rotate(-90 %d %d)">%s →</text>`, cx, cy, cx, cy, esc(rowLabel))
	k := 0
	for _, c := range sortedKeys(legend) {
		y := top + k*18
		fmt.Fprintf(&b, `<rect x="%d" y="%d" width="12" height="12" fill="%s" stroke="#666"/>`, left+cols*cellW+14, y, c)
		fmt.Fprintf(&b, `<text x="%d" y="%d">%s</text>`, left+cols*cellW+30, y+10, esc(legend[c]))
		k++
	}
	b.WriteString(`</svg>`)
	return b.String()
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	// Sort by the legend text, so that the legend reads in a stable order.
	for i := 1; i < len(keys); i++ {
		for j := i; j > 0 && m[keys[j]] < m[keys[j-1]]; j-- {
			keys[j], keys[j-1] = keys[j-1], keys[j]
		}
	}
	return keys
}

// Table renders an HTML table with a header row.
func Table(header []string, rows [][]string) string {
	var b strings.Builder
	b.WriteString(`<table style="border-collapse:collapse;font-family:sans-serif;font-size:12px">`)
	b.WriteString("<tr>")
	for _, h := range header {
		b.WriteString(`<th style="border-bottom:1px solid #444;padding:2px 8px;text-align:left">` + esc(h) + "</th>")
	}
	b.WriteString("</tr>")
	for _, row := range rows {
		b.WriteString("<tr>")
		for _, c := range row {
			b.WriteString(`<td style="padding:2px 8px;border-bottom:1px solid #ddd">` + esc(c) + "</td>")
		}
		b.WriteString("</tr>")
	}
	b.WriteString("</table>")
	return b.String()
}

// textWidth estimates the width in pixels of 11 px sans-serif text (generous: wide letters).
func textWidth(s string) int { return (13*len([]rune(s)) + 1) / 2 }

// Boxes returns one layer of a Diagram from label, note pairs: Boxes("q", "[2, 4, 8]", "k",
// "[2, 4, 8]") is two boxes. An odd count leaves the last box without a note.
func Boxes(labelsAndNotes ...string) []Box {
	var out []Box
	for i := 0; i < len(labelsAndNotes); i += 2 {
		b := Box{Label: labelsAndNotes[i]}
		if i+1 < len(labelsAndNotes) {
			b.Note = labelsAndNotes[i+1]
		}
		out = append(out, b)
	}
	return out
}

// niceTicks returns round tick values (multiples of 1, 2 or 5 × 10ᵏ, about 4–6 of them) in
// [lo, hi].
func niceTicks(lo, hi float64) []float64 {
	if !(hi > lo) {
		return []float64{lo}
	}
	raw := (hi - lo) / 4
	p := math.Pow(10, math.Floor(math.Log10(raw)))
	step := p // the multiple of p nearest to raw on a log scale
	for _, m := range []float64{2, 5, 10} {
		if math.Abs(math.Log(m*p/raw)) < math.Abs(math.Log(step/raw)) {
			step = m * p
		}
	}
	var ticks []float64
	for k := math.Ceil(lo/step - 1e-9); k*step <= hi+step*1e-9; k++ {
		v := k * step
		if math.Abs(v) < step*1e-9 {
			v = 0
		}
		ticks = append(ticks, math.Round(v/p)*p) // no 0.30000000000000004
	}
	return ticks
}
