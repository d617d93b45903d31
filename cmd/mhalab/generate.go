package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/gomlx/gomlx/backends"

	"github.com/mhalab/mhalab/models/smollm2"
	"github.com/mhalab/mhalab/xla"
)

// `mhalab generate` and `mhalab chat` are a public contract (issue 15): other tools rely on
// their flags and on --json's object. The logic lives in models/smollm2 (RunGenerate, RunChat).

// samplingFlags are the flags shared by generate and chat.
type samplingFlags struct {
	backend, model string
	maxNew         int
	greedy         bool
	s              smollm2.Sampling
}

func (f *samplingFlags) add(fs *flag.FlagSet, withGreedy bool) {
	fs.StringVar(&f.backend, "backend", "", `go, xla:cpu or xla:cuda (default: $GOMLX_BACKEND, else xla:cpu when its plugin loads, else go)`)
	fs.StringVar(&f.model, "model", "", "GGUF file of the model (default: the one scripts/setup.sh installs, under $MHALAB_MODELS)")
	fs.IntVar(&f.maxNew, "max-new-tokens", smollm2.DefaultMaxNewTokens, "generate at most N tokens (per answer, for chat)")
	if withGreedy {
		fs.BoolVar(&f.greedy, "greedy", false, "pick the most likely token at each step (the default)")
	}
	fs.Float64Var(&f.s.Temperature, "temperature", 0, "sample from softmax(logits/T) instead of greedy decoding (T > 0; 0 is refused: for greedy decoding, the default, leave --temperature out)")
	fs.IntVar(&f.s.TopK, "top-k", 50, "with --temperature: sample among the K most likely tokens (0: all)")
	fs.Float64Var(&f.s.TopP, "top-p", 1, "with --temperature: sample among the most likely tokens whose probability reaches P, in (0, 1]")
	fs.Uint64Var(&f.s.Seed, "seed", 0, "with --temperature: seed of the random numbers")
}

// check resolves greedy vs sampling: the sampling flags need --temperature; --greedy excludes it.
func (f *samplingFlags) check(fs *flag.FlagSet) error {
	set := map[string]bool{}
	fs.Visit(func(fl *flag.Flag) { set[fl.Name] = true })
	if f.greedy && set["temperature"] {
		return errors.New("--greedy and --temperature exclude each other")
	}
	// --temperature 0 is refused rather than read as greedy: the sampling flags (--top-k, --top-p,
	// --seed) need --temperature, and at T = 0 they would be ignored without a word.
	if set["temperature"] && f.s.Temperature == 0 {
		return errors.New("--temperature 0: want T > 0 (greedy decoding is the default: leave out --temperature, or give --greedy)")
	}
	if !set["temperature"] {
		for _, name := range []string{"top-k", "top-p", "seed"} {
			if set[name] {
				return fmt.Errorf("--%s needs --temperature (greedy decoding is the default)", name)
			}
		}
		f.s.Greedy = true
	}
	if err := f.s.Check(); err != nil {
		return fmt.Errorf("--%w", err)
	}
	if err := xla.CheckSpec(f.backend); err != nil {
		return &usageError{err.Error()}
	}
	return nil
}

func (f *samplingFlags) newBackend() (backends.Backend, string, error) {
	return xla.NewWithReason(f.backend)
}

func runGenerate(c command, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet(c.name)
	var f samplingFlags
	var o smollm2.GenerateOptions
	f.add(fs, true)
	fs.BoolVar(&o.Chat, "chat", false, "wrap PROMPT as one user turn with the model's chat template (and its default system prompt)")
	fs.BoolVar(&o.JSON, "json", false, `print one JSON object at the end instead of streaming: {"prompt_ids": [...], "ids": [...], "text": "..."}`)
	rest, err := parseFlagsAndArgs(fs, c, args, stdout) // PROMPT before or after the flags
	if err != nil {
		return err
	}
	switch {
	case len(rest) == 0:
		return usagef("no PROMPT: give the text to continue as the last argument")
	case len(rest) > 1:
		return usagef("one PROMPT expected, got %d arguments (quote the prompt)", len(rest))
	}
	if err := f.check(fs); err != nil {
		return err
	}
	o.Model, o.MaxNewTokens, o.Sampling, o.Prompt = f.model, f.maxNew, f.s, rest[0]
	return smollm2.RunGenerate(f.newBackend, o, stdout, stderr)
}

func runChat(c command, args []string, stdout, stderr io.Writer) error {
	return runChatFrom(c, args, os.Stdin, stdout, stderr)
}

// runChatFrom is runChat reading the conversation from stdin.
func runChatFrom(c command, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := newFlagSet(c.name)
	var f samplingFlags
	o := smollm2.ChatOptions{}
	f.add(fs, false)
	fs.IntVar(&o.MaxContext, "max-context", smollm2.DefaultChatContext, "positions of the conversation (its KV cache), at most the model's context")
	if err := parseFlags(fs, c, args, stdout); err != nil {
		return err
	}
	if err := f.check(fs); err != nil {
		return err
	}
	o.Model, o.MaxNewTokens, o.Sampling = f.model, f.maxNew, f.s
	return smollm2.RunChat(f.newBackend, o, stdin, stdout, stderr)
}
