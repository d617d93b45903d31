// Package attention is `mhalab attention`: the attention weights of every layer and head of
// all-MiniLM-L6-v2 on one sentence — a table of per-head summaries, JSON, or the explorer page.
package attention

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/mhalab/mhalab/explorer"
	"github.com/mhalab/mhalab/internal/atomicfile"
	"github.com/mhalab/mhalab/internal/cli"
	"github.com/mhalab/mhalab/internal/commands/internal/minilmrun"
)

// Options are the flags and arguments of `mhalab attention`.
type Options struct {
	minilmrun.Options
	HTML      string   // write the explorer page there ("" = none)
	Sentences []string // exactly one
}

// attentionJSON is the line `mhalab attention --json` prints.
type attentionJSON struct {
	Tokens     []string        `json:"tokens"`
	IDs        []int           `json:"ids"`
	Attentions [][][][]float32 `json:"attentions"` // [layer][head][query][key]
}

// Run prints the attention weights of every layer and head for one sentence: with
// o.JSON one object {"tokens", "ids", "attentions" [layer][head][query][key]}; otherwise the
// tokens and the per-head summaries (explorer.Summarize). With o.HTML it also writes the
// explorer page.
func (o Options) Run(_ context.Context, io cli.IO) error {
	if len(o.Sentences) != 1 {
		return cli.Usagef("want exactly one SENTENCE (quote it)")
	}
	if err := cli.CheckBackend(o.Backend); err != nil {
		return err
	}
	if err := cli.CheckOutput(cli.FileArg{Flag: "--html", Path: o.HTML}, true, minilmrun.Files(o.Model)...); err != nil {
		return err
	}
	sentence, stdout, stderr := o.Sentences[0], io.Out, io.Err
	l, err := minilmrun.Load(o.Options, o.Sentences)
	if err != nil {
		return err
	}
	defer l.Close()
	encs, err := l.Encode(o.Options, o.Sentences, stderr)
	if err != nil {
		return err
	}
	enc := encs[0]
	att, err := l.Model.Attention(l.Backend, enc)
	if err != nil {
		return err
	}
	if o.HTML != "" {
		if err := writePage(o.HTML, explorer.Data{Title: "all-MiniLM-L6-v2", Sentence: sentence, Tokens: enc.Tokens, Attentions: att}); err != nil {
			return err
		}
		fmt.Fprintf(stderr, "wrote the explorer page %s\n", o.HTML)
	}
	if o.JSON {
		return json.NewEncoder(stdout).Encode(attentionJSON{Tokens: enc.Tokens, IDs: enc.IDs, Attentions: att})
	}
	sums, err := explorer.Summarize(att, enc.Tokens)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "all-MiniLM-L6-v2 on %s: %d layers × %d heads over %d tokens\n", l.Reason, len(att), len(att[0]), enc.Len())
	fmt.Fprintf(stdout, "tokens: %s\n\n", strings.Join(enc.Tokens, " "))
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "LAYER\tHEAD\tENTROPY\tMEAN DIST\tPREV\t[CLS]\t[SEP]\tKIND\tSTRONGEST LINK")
	for _, layer := range sums {
		for _, s := range layer {
			q, k, w := strongest(att[s.Layer][s.Head], enc.Tokens)
			fmt.Fprintf(tw, "%d\t%d\t%.2f\t%.2f\t%.2f\t%.2f\t%.2f\t%s\t%s → %s %.2f\n", s.Layer, s.Head, s.Entropy, s.MeanDistance,
				s.PrevShare, s.CLSShare, s.SEPShare, s.Kind, enc.Tokens[q], enc.Tokens[k], w)
		}
	}
	return tw.Flush()
}

// strongest returns the largest weight between two ordinary tokens (not [CLS]/[SEP], not
// itself), or [CLS] → [CLS] when there is none.
func strongest(w [][]float32, tokens []string) (q, k int, weight float32) {
	for i, row := range w {
		for j, p := range row {
			if i == j || special(tokens[i]) || special(tokens[j]) {
				continue
			}
			if p > weight {
				q, k, weight = i, j, p
			}
		}
	}
	return q, k, weight
}

func special(tok string) bool { return tok == "[CLS]" || tok == "[SEP]" }

func writePage(path string, d explorer.Data) error {
	if err := atomicfile.Write(path, func(w io.Writer) error { return explorer.Write(w, d) }); err != nil {
		return fmt.Errorf("--html %s: %w", path, err)
	}
	return nil
}
