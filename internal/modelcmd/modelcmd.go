// Package modelcmd is the logic of `mhalab embed` and `mhalab attention` (cmd/mhalab only
// parses their flags): load all-MiniLM-L6-v2, check the input, run the encoder on the chosen
// backend, and print embeddings or attention weights — as text for people, as JSON lines for
// programs (stdout then holds only the JSON; warnings go to stderr), or as the explorer page.
package modelcmd

import (
	"fmt"
	"io"

	"github.com/gomlx/gomlx/backends"
	"github.com/mhalab/mhalab/internal/textinput"
	"github.com/mhalab/mhalab/models/minilm"
	"github.com/mhalab/mhalab/xla"
)

// Options are the flags common to both commands.
type Options struct {
	Backend   string // "" = default (xla.NewWithReason)
	JSON      bool   // one JSON object per line on stdout
	Model     string // the model folder; "" = minilm.DefaultDir() ($MHALAB_MODELS)
	MaxTokens int    // ≤ 0: minilm.DefaultMaxTokens (256); at most the model's 512 positions
}

// loaded is a model and a backend ready to run.
type loaded struct {
	model   *minilm.Model
	backend backends.Backend
	reason  string
}

func (l *loaded) close() { l.backend.Finalize() }

// load checks the options and the sentences, then loads the model and opens the backend.
// Every error is one line.
func load(o Options, sentences []string) (*loaded, error) {
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
	backend, reason, err := xla.NewWithReason(o.Backend)
	if err != nil {
		return nil, err
	}
	return &loaded{model: m, backend: backend, reason: reason}, nil
}

// encode tokenises the sentences, warning on stderr about each truncated one.
func (l *loaded) encode(o Options, sentences []string, stderr io.Writer) ([]minilm.Encoding, error) {
	limit := o.MaxTokens
	if limit <= 0 {
		limit = minilm.DefaultMaxTokens
	}
	encs, dropped, err := l.model.Encode(sentences, limit)
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
