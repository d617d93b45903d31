// Package generate is `mhalab generate`: continue a prompt with SmolLM2-135M-Instruct, streamed
// token by token (or one JSON object {prompt_ids, ids, text}).
//
// `mhalab generate` and `mhalab chat` are a public contract (issue 15): other tools rely on their
// flags and on --json's object.
package generate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/mhalab/mhalab/internal/cli"
	"github.com/mhalab/mhalab/internal/commands/internal/smolrun"
	"github.com/mhalab/mhalab/internal/textinput"
	"github.com/mhalab/mhalab/models/smollm2"
)

// Options are the flags and the argument of `mhalab generate`.
type Options struct {
	smolrun.Options
	Chat   bool     // wrap the prompt as one user turn with the chat template
	JSON   bool     // print one JSON object at the end instead of streaming
	Prompt []string // the positional arguments: exactly one PROMPT
}

// DefaultMaxNewTokens is the default of --max-new-tokens (generate and chat).
const DefaultMaxNewTokens = 128

// generateJSON is what --json prints.
type generateJSON struct {
	PromptIDs []int  `json:"prompt_ids"`
	IDs       []int  `json:"ids"`
	Text      string `json:"text"`
}

// Run generates a continuation of the prompt and streams it to io.Out, then a newline (or
// prints only one JSON object with --json); progress goes to io.Err. Bad input (empty prompt,
// a prompt longer than the context, a corrupt file, bad sampling options) is reported before
// the backend is created, so the error is the only line printed. ctx stops the generation
// between two tokens.
func (o Options) Run(ctx context.Context, io cli.IO) error {
	switch {
	case len(o.Prompt) == 0:
		return cli.Usagef("no PROMPT: give the text to continue as the last argument")
	case len(o.Prompt) > 1:
		return cli.Usagef("one PROMPT expected, got %d arguments (quote the prompt)", len(o.Prompt))
	}
	sampling, err := o.ResolveSampling()
	if err != nil {
		return err
	}
	return o.generate(ctx, o.Prompt[0], sampling, io.Out, io.Err)
}

// generate is Run once the prompt and the sampling are known.
func (o Options) generate(ctx context.Context, prompt0 string, sampling smollm2.Sampling, stdout, stderr io.Writer) error {
	if prompt0 == "" {
		return errors.New("empty prompt: give the text to continue as the last argument")
	}
	if err := textinput.CheckUTF8("PROMPT", prompt0); err != nil {
		return err
	}
	m, err := o.OpenModel(sampling)
	if err != nil {
		return err
	}
	ctxLen := m.Config.MaxPositionEmbeddings
	if o.MaxNewTokens >= ctxLen {
		return fmt.Errorf("--max-new-tokens %d: the model's context is %d tokens, prompt included (at most %d new tokens)",
			o.MaxNewTokens, ctxLen, ctxLen-1)
	}
	text, withTemplate := prompt0, ""
	if o.Chat {
		if text, err = m.ChatTemplate([]smollm2.Message{{Role: "user", Content: prompt0}}, true); err != nil {
			return err
		}
		withTemplate = " with the chat template"
	}
	fits := fmt.Sprintf("the model's context is %d tokens, prompt and --max-new-tokens %d included", ctxLen, o.MaxNewTokens)
	// Refuse text that cannot fit by its length alone, before spending the tokenizer's time on it.
	if least := m.Tokenizer.MinTokens(text); least+o.MaxNewTokens > ctxLen {
		return fmt.Errorf("the prompt is %d bytes%s, at least %d tokens: %s", len(text), withTemplate, least, fits)
	}
	prompt := m.Tokenizer.Encode(text)
	if len(prompt) == 0 {
		return errors.New("the prompt has no tokens")
	}
	if len(prompt)+o.MaxNewTokens > ctxLen {
		hint := fmt.Sprintf("lower --max-new-tokens to %d or shorten the prompt", ctxLen-len(prompt))
		if len(prompt) >= ctxLen {
			hint = "shorten the prompt"
		}
		return fmt.Errorf("the prompt is %d tokens%s: %s (%s)", len(prompt), withTemplate, fits, hint)
	}
	s, backendName, closeSession, err := smolrun.OpenSession(o.Backend, m, len(prompt)+o.MaxNewTokens, stderr)
	if err != nil {
		return err
	}
	defer closeSession()
	fmt.Fprintf(stderr, "mhalab generate: %s, %d prompt tokens, up to %d new, backend %s\n", m.Name, len(prompt), o.MaxNewTokens, backendName)
	dec := m.Tokenizer.NewStreamDecoder()
	emit := func(id int) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		if o.JSON {
			return nil
		}
		_, err := io.WriteString(stdout, dec.Next(id))
		return err
	}
	ids, err := s.Generate(prompt, o.MaxNewTokens, sampling, emit)
	if err != nil {
		return err
	}
	if !o.JSON {
		_, err = io.WriteString(stdout, dec.Flush()+"\n")
		return err
	}
	out, err := m.Tokenizer.Decode(ids)
	if err != nil {
		return err
	}
	if ids == nil {
		ids = []int{}
	}
	b, err := json.Marshal(generateJSON{PromptIDs: prompt, IDs: ids, Text: out})
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(stdout, "%s\n", b)
	return err
}
