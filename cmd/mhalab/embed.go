package main

import (
	"errors"
	"flag"
	"io"
	"path/filepath"

	"github.com/mhalab/mhalab/internal/modelcmd"
	"github.com/mhalab/mhalab/models/minilm"
	"github.com/mhalab/mhalab/models/modelfiles"
	"github.com/mhalab/mhalab/xla"
)

// modelFlags adds the flags both commands share.
func modelFlags(fs *flag.FlagSet, o *modelcmd.Options) {
	fs.StringVar(&o.Backend, "backend", "", `backend: go, xla:cpu or xla:cuda (default: $GOMLX_BACKEND, else xla:cpu when its plugin loads, else go)`)
	fs.BoolVar(&o.JSON, "json", false, "print JSON only on stdout (warnings go to stderr)")
	fs.StringVar(&o.Model, "model", "", "the all-MiniLM-L6-v2 folder (default: $MHALAB_MODELS/all-minilm-l6-v2, where scripts/setup.sh puts it)")
	fs.IntVar(&o.MaxTokens, "max-tokens", 256, "truncate longer input to N tokens ([CLS] and [SEP] included), at most 512")
}

func runEmbed(c command, args []string, stdout, stderr io.Writer) error {
	var o modelcmd.Options
	fs := newFlagSet(c.name)
	modelFlags(fs, &o)
	sentences, err := parseFlagsAndArgs(fs, c, args, stdout)
	if err != nil {
		return err
	}
	if len(sentences) == 0 {
		return &usageError{"no sentence given"}
	}
	if err := xla.CheckSpec(o.Backend); err != nil {
		return &usageError{err.Error()}
	}
	return modelcmd.Embed(o, sentences, stdout, stderr)
}

func runAttention(c command, args []string, stdout, stderr io.Writer) error {
	var o modelcmd.AttentionOptions
	fs := newFlagSet(c.name)
	modelFlags(fs, &o.Options)
	fs.StringVar(&o.HTML, "html", "", "write the interactive explorer page (self-contained HTML) to FILE")
	sentences, err := parseFlagsAndArgs(fs, c, args, stdout)
	if err != nil {
		return err
	}
	if len(sentences) != 1 {
		return &usageError{"want exactly one SENTENCE (quote it)"}
	}
	if err := xla.CheckSpec(o.Backend); err != nil {
		return &usageError{err.Error()}
	}
	if err := checkOutput(fileArg{"--html", o.HTML}, true, modelFiles(o.Model)...); err != nil {
		return err
	}
	return modelcmd.Attention(o, sentences[0], stdout, stderr)
}

// parseFlagsAndArgs parses flags placed before or after the positional arguments (so that
// `mhalab embed "a b" --json` works) and returns the positional arguments; "--" ends the flags.
func parseFlagsAndArgs(fs *flag.FlagSet, c command, args []string, stdout io.Writer) ([]string, error) {
	var positional []string
	for {
		if err := parseFlagsAllowArgs(fs, c, args, stdout); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return positional, nil
		}
		if len(args) > len(rest) && args[len(args)-len(rest)-1] == "--" {
			return append(positional, rest...), nil
		}
		positional = append(positional, rest[0])
		args = rest[1:]
	}
}

// parseFlagsAllowArgs is parseFlags without the refusal of positional arguments.
func parseFlagsAllowArgs(fs *flag.FlagSet, c command, args []string, stdout io.Writer) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return parseFlags(fs, c, []string{"-h"}, stdout) // prints the help, returns ErrHelp
		}
		return &usageError{err.Error()}
	}
	return nil
}

// modelFiles are the files of all-MiniLM-L6-v2 that embed and attention read, in the folder
// --model names (or the default one), as inputs for checkOutput.
func modelFiles(dir string) []fileArg {
	if dir == "" {
		d, err := minilm.DefaultDir()
		if err != nil {
			return nil // loading the model says why
		}
		dir = d
	}
	var files []fileArg
	for _, p := range []modelfiles.Pinned{minilm.FileConfig(), minilm.FileTokenizer(), minilm.FileWeights()} {
		files = append(files, fileArg{"--model's " + p.Name, filepath.Join(dir, p.Name)})
	}
	return files
}
