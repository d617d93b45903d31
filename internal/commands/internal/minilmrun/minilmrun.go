// Package minilmrun is what `mhalab embed` and `mhalab attention` share: their common flags,
// loading all-MiniLM-L6-v2 and the backend, and tokenising with a warning for each truncated
// sentence.
package minilmrun

import (
	"fmt"
	"io"
	"path/filepath"

	"github.com/gomlx/gomlx/backends"
	"github.com/mhalab/mhalab/internal/cli"
	"github.com/mhalab/mhalab/internal/textinput"
	"github.com/mhalab/mhalab/models/minilm"
	"github.com/mhalab/mhalab/models/modelfiles"
	"github.com/mhalab/mhalab/xla"
)

// Options are the flags common to both commands.
type Options struct {
	Backend   string // "" = default (xla.NewWithReason)
	JSON      bool   // one JSON object per line on stdout
	Model     string // the model folder; "" = minilm.DefaultDir() ($MHALAB_MODELS)
	MaxTokens int    // ≤ 0: minilm.DefaultMaxTokens (256); at most the model's 512 positions
}

// Loaded is a model and a backend ready to run.
type Loaded struct {
	Model   *minilm.Model
	Backend backends.Backend
	Reason  string // which backend and why (xla.NewWithReason)
}

// Close frees the backend.
func (l *Loaded) Close() { l.Backend.Finalize() }

// Load checks the options and the sentences, then loads the model and opens the backend.
// Every error is one line.
func Load(o Options, sentences []string) (*Loaded, error) {
	if o.MaxTokens > 512 {
		return nil, fmt.Errorf("--max-tokens %d is above the model's 512 positions", o.MaxTokens)
	}
	if o.MaxTokens < 0 || (o.MaxTokens > 0 && o.MaxTokens < 3) {
		return nil, fmt.Errorf("--max-tokens %d: want 3 to 512 (0 = %d)", o.MaxTokens, minilm.DefaultMaxTokens)
	}
	for i, s := range sentences {
		if err := textinput.CheckUTF8(fmt.Sprintf("sentence %d", i+1), s); err != nil {
			return nil, err
		}
	}
	if err := xla.CheckSpec(o.Backend); err != nil {
		return nil, err
	}
	dir := o.Model
	if dir == "" {
		var err error
		if dir, err = minilm.DefaultDir(); err != nil {
			return nil, err
		}
	}
	m, err := minilm.Load(dir)
	if err != nil {
		return nil, err
	}
	backend, reason, err := cli.NewWithReason(o.Backend)
	if err != nil {
		return nil, err
	}
	return &Loaded{Model: m, Backend: backend, Reason: reason}, nil
}

// Encode tokenises the sentences, warning on stderr about each truncated one.
func (l *Loaded) Encode(o Options, sentences []string, stderr io.Writer) ([]minilm.Encoding, error) {
	limit := o.MaxTokens
	if limit <= 0 {
		limit = minilm.DefaultMaxTokens
	}
	encs, dropped, err := l.Model.Encode(sentences, limit)
	if err != nil {
		return nil, err
	}
	for i, n := range dropped {
		if n > 0 {
			hint := " (--max-tokens N raises the limit up to 512)"
			if limit >= 512 {
				hint = " (the model has 512 positions)"
			}
			fmt.Fprintf(stderr, "warning: sentence %d has %d tokens; truncated to the first %d%s\n", i+1, encs[i].Len()+n, limit, hint)
		}
	}
	return encs, nil
}

// Files are the files of all-MiniLM-L6-v2 that embed and attention read, in the folder dir (""
// = the default one), as inputs for cli.CheckOutput.
func Files(dir string) []cli.FileArg {
	if dir == "" {
		d, err := minilm.DefaultDir()
		if err != nil {
			return nil // loading the model says why
		}
		dir = d
	}
	var files []cli.FileArg
	for _, p := range []modelfiles.Pinned{minilm.FileConfig(), minilm.FileTokenizer(), minilm.FileWeights()} {
		files = append(files, cli.FileArg{Flag: "--model's " + p.Name, Path: filepath.Join(dir, p.Name)})
	}
	return files
}
