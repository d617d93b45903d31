package main

import (
	"context"
	"errors"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/mhalab/mhalab/internal/cli"
	"github.com/mhalab/mhalab/internal/commands/explore"
)

func runExplore(c command, args []string, stdout, stderr io.Writer) error {
	var o explore.Options
	fs := newFlagSet(c.name)
	fs.StringVar(&o.Model, "model", "", `a Llama-family GGUF file, a BERT-family folder (config.json, tokenizer.json, model.safetensors), or "minilm" / "smollm2" for the models scripts/setup.sh installs (default minilm)`)
	fs.IntVar(&o.Port, "port", 0, "listen on 127.0.0.1:N (0: a free port)")
	fs.StringVar(&o.Backend, "backend", "", `go, xla:cpu or xla:cuda (default: $GOMLX_BACKEND, else xla:cpu when its plugin loads, else go)`)
	fs.IntVar(&o.MaxTokens, "max-tokens", 0, "show texts of at most N tokens (0: 128; at most the model's context)")
	if err := parseFlags(fs, c, args, stdout); err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	err := o.Run(ctx, cli.IO{Out: stdout, Err: stderr})
	if ue := (*cli.UsageError)(nil); errors.As(err, &ue) {
		return &usageError{ue.Msg}
	}
	return err
}
