// Package embed is `mhalab embed`: sentence embeddings with all-MiniLM-L6-v2 (mean pooling,
// L2-normalised), as text for people or as JSON lines for programs (stdout then holds only the
// JSON; warnings go to stderr).
package embed

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/mhalab/mhalab/internal/cli"
	"github.com/mhalab/mhalab/internal/commands/internal/minilmrun"
	"github.com/mhalab/mhalab/models/minilm"
)

// embedLine is one line of `mhalab embed --json`.
type embedLine struct {
	Sentence  string    `json:"sentence"`
	Tokens    []string  `json:"tokens"`
	Embedding []float32 `json:"embedding"`
}

// Options are the flags and arguments of `mhalab embed`.
type Options struct {
	minilmrun.Options
	Sentences []string
}

// Run prints the sentence embeddings of o.Sentences on io.Out: with o.JSON one object per line
// {"sentence", "tokens" ([CLS] … [SEP]), "embedding" (384 floats, L2-normalised mean
// pooling)}; otherwise the tokens, the first values of each embedding and, for several
// sentences, their cosine similarities.
func (o Options) Run(_ context.Context, io cli.IO) error {
	sentences, stdout := o.Sentences, io.Out
	if len(sentences) == 0 {
		return cli.Usagef("no sentence given")
	}
	if err := cli.CheckBackend(o.Backend); err != nil {
		return err
	}
	l, err := minilmrun.Load(o.Options, sentences)
	if err != nil {
		return err
	}
	defer l.Close()
	encs, err := l.Encode(o.Options, sentences, io.Err)
	if err != nil {
		return err
	}
	embs, err := l.Model.Embed(l.Backend, encs, 32)
	if err != nil {
		return err
	}
	if o.JSON {
		enc := json.NewEncoder(stdout)
		for i, s := range sentences {
			if err := enc.Encode(embedLine{Sentence: s, Tokens: encs[i].Tokens, Embedding: embs[i]}); err != nil {
				return err
			}
		}
		return nil
	}
	fmt.Fprintf(stdout, "all-MiniLM-L6-v2 on %s: %d-dimensional sentence embeddings (mean pooling, L2-normalised)\n\n", l.Reason, l.Model.Config.HiddenSize)
	for i, s := range sentences {
		fmt.Fprintf(stdout, "%d. %q\n   tokens (%d): %s\n   embedding: [%s …]\n", i+1, s, encs[i].Len(), strings.Join(encs[i].Tokens, " "), head(embs[i], 6))
	}
	if len(sentences) > 1 {
		fmt.Fprintf(stdout, "\ncosine similarity:\n")
		tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprint(tw, "\t")
		for j := range sentences {
			fmt.Fprintf(tw, "%d\t", j+1)
		}
		fmt.Fprintln(tw)
		for i := range sentences {
			fmt.Fprintf(tw, "%d\t", i+1)
			for j := range sentences {
				fmt.Fprintf(tw, "%.4f\t", minilm.Cosine(embs[i], embs[j]))
			}
			fmt.Fprintln(tw)
		}
		_ = tw.Flush()
	}
	return nil
}

func head(v []float32, n int) string {
	parts := make([]string, 0, n)
	for _, x := range v[:min(n, len(v))] {
		parts = append(parts, fmt.Sprintf("%.4f", x))
	}
	return strings.Join(parts, " ")
}
