package explorer

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"fmt"
	"html"
	"io"
	"strconv"
	"strings"
)

//go:embed page.html
var pageTemplate string

// viewJS is view.js (ViewJS).
//
//go:embed view.js
var viewJS string

// ViewJS returns the script that draws the head view, the heatmap and the model view's
// thumbnails (one global, AttentionView): Write inlines it into the page; the live explorer
// serves it.
func ViewJS() string { return viewJS }

// Data is what the page shows: one sentence's tokens and attention weights.
type Data struct {
	Title    string // page title, e.g. "all-MiniLM-L6-v2"
	Sentence string // the input text
	Tokens   []string
	// Attentions are the weights [layer][head][query][key], each row summing to 1.
	Attentions [][][][]float32
}

// Write writes the self-contained explorer page for d: HTML with inline style, script and
// data (weights rounded to 4 decimals), no external resource.
func Write(w io.Writer, d Data) error {
	sums, err := Summarize(d.Attentions, d.Tokens)
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	buf.WriteString(`{"title":`)
	writeJSON(&buf, d.Title)
	buf.WriteString(`,"sentence":`)
	writeJSON(&buf, d.Sentence)
	buf.WriteString(`,"tokens":`)
	writeJSON(&buf, d.Tokens)
	buf.WriteString(`,"summaries":`)
	writeJSON(&buf, summariesJSON(sums))
	buf.WriteString(`,"att":`)
	writeWeights(&buf, d.Attentions)
	buf.WriteString("}")
	// The data sits in a <script type="application/json">: json.Marshal escapes <, > and &, so
	// no token can close the element.
	page := strings.Replace(pageTemplate, "/*VIEW*/", viewJS, 1)
	page = strings.Replace(page, "/*DATA*/{}", buf.String(), 1)
	page = strings.Replace(page, "<!--TITLE-->", html.EscapeString(d.Title), 1)
	_, err = io.WriteString(w, page)
	return err
}

// IFrame returns page (a Write result) inside an <iframe srcdoc>, for front-ends that show
// HTML output (a GoNB notebook: gonbui.DisplayHTML): the page's script runs in its own frame.
func IFrame(page string, height int) string {
	return fmt.Sprintf(`<iframe style="width:100%%;height:%dpx;border:1px solid #ddd" srcdoc="%s"></iframe>`,
		height, html.EscapeString(page))
}

func writeJSON(buf *bytes.Buffer, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // strings and numbers always marshal
	}
	buf.Write(b)
}

// writeWeights writes [layer][head][query][key] as nested arrays, 4 decimals.
func writeWeights(buf *bytes.Buffer, att [][][][]float32) {
	buf.WriteByte('[')
	for l, layer := range att {
		if l > 0 {
			buf.WriteByte(',')
		}
		buf.WriteByte('[')
		for h, head := range layer {
			if h > 0 {
				buf.WriteByte(',')
			}
			buf.WriteByte('[')
			for q, row := range head {
				if q > 0 {
					buf.WriteByte(',')
				}
				buf.WriteByte('[')
				for k, p := range row {
					if k > 0 {
						buf.WriteByte(',')
					}
					s := strconv.FormatFloat(float64(p), 'f', 4, 32)
					s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
					if s == "" || s == "-" {
						s = "0"
					}
					buf.WriteString(s)
				}
				buf.WriteByte(']')
			}
			buf.WriteByte(']')
		}
		buf.WriteByte(']')
	}
	buf.WriteByte(']')
}

type summaryJSON struct {
	Layer        int     `json:"layer"`
	Head         int     `json:"head"`
	Entropy      float64 `json:"entropy"`
	NormEntropy  float64 `json:"normEntropy"`
	MeanDistance float64 `json:"meanDistance"`
	Prev         float64 `json:"prev"`
	Next         float64 `json:"next"`
	Self         float64 `json:"self"`
	CLS          float64 `json:"cls"`
	SEP          float64 `json:"sep"`
	Kind         string  `json:"kind"`
}

func summariesJSON(sums [][]HeadSummary) []summaryJSON {
	var out []summaryJSON
	r := func(x float64) float64 { v, _ := strconv.ParseFloat(strconv.FormatFloat(x, 'f', 4, 64), 64); return v }
	for _, layer := range sums {
		for _, s := range layer {
			out = append(out, summaryJSON{s.Layer, s.Head, r(s.Entropy), r(s.NormEntropy), r(s.MeanDistance),
				r(s.PrevShare), r(s.NextShare), r(s.SelfShare), r(s.CLSShare), r(s.SEPShare), s.Kind})
		}
	}
	return out
}
