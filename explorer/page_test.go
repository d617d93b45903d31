package explorer

import (
	"bytes"
	"encoding/json"
	"math"
	"strings"
	"testing"
)

// TestWriteEmbedsData: the page carries the tokens (hostile ones included) and the weights to
// 4 decimals in its JSON data element, which no token can close, and loads nothing.
func TestWriteEmbedsData(t *testing.T) {
	tokens := []string{"[CLS]", "</script><script>alert(1)</script>", "a&b", "[SEP]"}
	att := syntheticAttention(len(tokens))
	var buf bytes.Buffer
	if err := Write(&buf, Data{Title: "t<b>", Sentence: "s", Tokens: tokens, Attentions: att}); err != nil {
		t.Fatal(err)
	}
	page := buf.String()
	const open, end = `<script type="application/json" id="data">`, "</script>"
	i := strings.Index(page, open)
	if i < 0 {
		t.Fatal("no data element")
	}
	body := page[i+len(open):]
	body = body[:strings.Index(body, end)]
	var d struct {
		Tokens    []string
		Att       [][][][]float64
		Summaries []map[string]any
	}
	if err := json.Unmarshal([]byte(body), &d); err != nil {
		t.Fatalf("the data element does not parse (a token closed it?): %v", err)
	}
	if strings.Join(d.Tokens, "|") != strings.Join(tokens, "|") || len(d.Summaries) != 6*12 {
		t.Errorf("tokens %q, %d summaries", d.Tokens, len(d.Summaries))
	}
	for l := range att {
		for h := range att[l] {
			for q := range att[l][h] {
				for k, p := range att[l][h][q] {
					if math.Abs(float64(p)-d.Att[l][h][q][k]) > 5e-5 {
						t.Fatalf("weight %d.%d[%d][%d] = %g in the page, want %g", l, h, q, k, d.Att[l][h][q][k], p)
					}
				}
			}
		}
	}
	if strings.Contains(page, "<b>") || !strings.Contains(page, "t&lt;b&gt;") {
		t.Error("the title is not escaped")
	}
}

func TestWriteBadShapes(t *testing.T) {
	err := Write(&bytes.Buffer{}, Data{Tokens: []string{"a", "b"}, Attentions: [][][][]float32{{{{1, 0}}}}})
	if err == nil {
		t.Error("1 query row for 2 tokens: no error")
	}
}
