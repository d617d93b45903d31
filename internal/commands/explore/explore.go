// Package explore is `mhalab explore`: it loads a model, starts the live attention explorer
// (explorer/live) on 127.0.0.1 and prints its URL with the token, then serves until the
// context ends (Ctrl-C).
package explore

import (
	"context"
	"fmt"

	"github.com/mhalab/mhalab/explorer/live"
	"github.com/mhalab/mhalab/internal/cli"
	"github.com/mhalab/mhalab/xla"
)

// Options are the command's flags.
type Options struct {
	Model     string // a GGUF file, a BERT folder, "minilm" or "smollm2"; "" = minilm
	Port      int    // 0: a free port
	Backend   string // "" = the default (xla.NewWithReason)
	MaxTokens int    // ≤ 0: live.DefaultMaxTokens
}

// Run loads the model, starts the server, prints the URL on io.Out (progress on io.Err) and
// serves until ctx ends.
func (o Options) Run(ctx context.Context, io cli.IO) error {
	if err := xla.CheckSpec(o.Backend); err != nil {
		return cli.Usagef("--backend: %v", err)
	}
	if o.Port < 0 || o.Port > 65535 {
		return cli.Usagef("--port %d: want 0 (a free port) to 65535", o.Port)
	}
	if o.MaxTokens < 0 {
		return cli.Usagef("--max-tokens %d: want ≥ 4 (0 = %d)", o.MaxTokens, live.DefaultMaxTokens)
	}
	m, err := live.Open(o.Model, o.Backend, o.MaxTokens)
	if err != nil {
		return err
	}
	defer m.Close()
	s, err := live.NewServer(m, live.Options{})
	if err != nil {
		return err
	}
	l, err := s.Listen(ctx, o.Port)
	if err != nil {
		return err
	}
	info := m.Info()
	fmt.Fprintf(io.Err, "mhalab explore: %s (%s, %d layers × %d heads) on %s; Ctrl-C stops\n", info.Name, info.Kind, info.Layers, info.Heads, info.Backend)
	fmt.Fprintf(io.Out, "%s\n", l.URL)
	return l.Wait()
}
