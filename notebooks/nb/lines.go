package nb

import (
	"fmt"
	"math"
	"strings"
)

// AttentionLines draws how one query token attends (bertviz's head view, for one row of the
// weights): the tokens in two columns, the query highlighted on the left, a line from it to
// every key on the right whose width and opacity are the weight, and the weight written beside
// each key. weights is the query's row [len(tokens)], summing to 1.
func AttentionLines(title string, tokens []string, query int, weights []float64) string {
	const rowH, colGap, top = 22, 120, 40
	wordW := 0
	for _, t := range tokens {
		wordW = max(wordW, textWidth(t))
	}
	left := 10
	rightX := left + wordW + colGap
	width := max(rightX+wordW+60, titleWidth(title)+20)
	height := top + len(tokens)*rowH + 10
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" %s>`, width, height, fontStyle)
	fmt.Fprintf(&b, `<text x="%d" y="14" font-weight="bold">%s</text>`, left, esc(title))
	fmt.Fprintf(&b, `<text x="%d" y="30" font-style="italic">query</text>`, left)
	fmt.Fprintf(&b, `<text x="%d" y="30" font-style="italic">keys (weight)</text>`, rightX)
	y := func(i int) int { return top + i*rowH + rowH/2 }
	for j, w := range weights {
		if w <= 0 || math.IsNaN(w) {
			continue
		}
		fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="#2171b5" stroke-width="%.1f" stroke-opacity="%.2f"><title>%s → %s: %.3f</title></line>`,
			left+wordW+6, y(query), rightX-6, y(j), 0.5+6*w, 0.15+0.85*w, esc(tokens[query]), esc(tokens[j]), w)
	}
	for i, t := range tokens {
		weight := "normal"
		if i == query {
			weight = "bold"
			fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%d" height="%d" fill="#fdd0a2"/>`, left-3, y(i)-9, wordW+6, 18)
		}
		fmt.Fprintf(&b, `<text x="%d" y="%d" font-weight="%s">%s</text>`, left, y(i)+4, weight, esc(t))
		fill := colour(weights[i])
		fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%d" height="%d" fill="%s" stroke="#999"/>`, rightX-3, y(i)-9, wordW+6, 18, fill)
		ink := "#000"
		if weights[i] > 0.6 {
			ink = "#fff"
		}
		fmt.Fprintf(&b, `<text x="%d" y="%d" fill="%s">%s</text>`, rightX, y(i)+4, ink, esc(t))
		fmt.Fprintf(&b, `<text x="%d" y="%d">%.2f</text>`, rightX+wordW+8, y(i)+4, weights[i])
	}
	b.WriteString(`</svg>`)
	return b.String()
}
