// Package chat is `mhalab chat`: talk with SmolLM2-135M-Instruct, one line per message, the
// history kept in the KV cache; Ctrl-D (end of input) or Ctrl-C ends it.
//
// `mhalab generate` and `mhalab chat` are a public contract (issue 15): other tools rely on their
// flags.
package chat

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/mhalab/mhalab/internal/cli"
	"github.com/mhalab/mhalab/internal/commands/internal/smolrun"
	"github.com/mhalab/mhalab/internal/textinput"
	"github.com/mhalab/mhalab/models/smollm2"
)

// Options are the flags of `mhalab chat`.
type Options struct {
	smolrun.Options
	MaxContext int // positions of the conversation's KV cache
}

// maxLine is the longest line `mhalab chat` reads (1 MiB): more than the model's whole context
// can hold (8192 tokens of at most 81 bytes).
const maxLine = 1 << 20

// DefaultContext is the default of --max-context.
const DefaultContext = 2048

// Run is `mhalab chat`: a multi-turn conversation read line by line from io.In (one line is
// one user turn; Ctrl-D ends it). The whole conversation stays in one session's KV cache: each
// turn feeds only its new tokens — "<|im_end|>\n" closing the previous answer, the user turn, and
// "<|im_start|>assistant\n" — which is the chat template applied to the whole history.
// ctx ends the conversation between two tokens, or while waiting for a line.
func (o Options) Run(ctx context.Context, io cli.IO) error {
	sampling, err := o.ResolveSampling()
	if err != nil {
		return err
	}
	return o.chat(ctx, sampling, io.In, io.Out, io.Err)
}

// chat is Run once the sampling is known.
func (o Options) chat(ctx context.Context, sampling smollm2.Sampling, stdin io.Reader, stdout, stderr io.Writer) error {
	m, err := o.OpenModel(sampling)
	if err != nil {
		return err
	}
	if o.MaxContext < 1 || o.MaxContext > m.Config.MaxPositionEmbeddings {
		return fmt.Errorf("--max-context %d: want 1 … %d (the model's context)", o.MaxContext, m.Config.MaxPositionEmbeddings)
	}
	if ctxLen := m.Config.MaxPositionEmbeddings; o.MaxNewTokens >= ctxLen {
		return fmt.Errorf("--max-new-tokens %d: the model's context is %d tokens, messages included (at most %d new tokens)",
			o.MaxNewTokens, ctxLen, ctxLen-1)
	}
	if _, err := m.ChatTemplate(nil, true); err != nil {
		return err
	}
	s, backendName, closeSession, err := smolrun.OpenSession(o.Backend, m, o.MaxContext, stderr)
	if err != nil {
		return err
	}
	defer closeSession()
	fmt.Fprintf(stderr, "mhalab chat: %s on %s; one line per message, Ctrl-D quits\n", m.Name, backendName)
	done := make(chan struct{})
	defer close(done)
	lines := readLines(stdin, done)
	first := true
	for lineNo := 1; ; lineNo++ {
		fmt.Fprint(stdout, "> ")
		var next line
		select {
		case next = <-lines:
		case <-ctx.Done():
			fmt.Fprintln(stdout)
			return ctx.Err()
		}
		if !next.ok {
			fmt.Fprintln(stdout)
			if errors.Is(next.err, bufio.ErrTooLong) {
				return fmt.Errorf("stdin line %d: longer than 1 MiB: a message must fit the conversation's --max-context %d positions", lineNo, o.MaxContext)
			}
			return next.err
		}
		line := strings.TrimRight(next.text, "\r")
		if err := textinput.CheckUTF8(fmt.Sprintf("stdin line %d", lineNo), line); err != nil {
			return err
		}
		if strings.TrimSpace(line) == "" {
			continue
		}
		turn := smollm2.ChatML([]smollm2.Message{{Role: "user", Content: line}}, true)
		if !first {
			turn = "<|im_end|>\n" + strings.TrimPrefix(turn, "<|im_start|>system\n"+smollm2.DefaultSystemPrompt+"<|im_end|>\n")
		}
		first = false
		// A message that cannot fit even an empty conversation is refused, by its length in bytes
		// first (before the tokenizer runs), then by its tokens; one that does not fit what is
		// left of this one means the conversation is full.
		holds := fmt.Sprintf("the conversation holds --max-context %d positions (the model's context: %d), an answer's first token included",
			s.Cap(), m.Config.MaxPositionEmbeddings)
		if least := m.Tokenizer.MinTokens(turn); least+1 > s.Cap() {
			return fmt.Errorf("stdin line %d: the message is %d bytes, at least %d tokens: %s", lineNo, len(line), least, holds)
		}
		ids := m.Tokenizer.Encode(turn)
		if len(ids)+1 > s.Cap() {
			return fmt.Errorf("stdin line %d: the message is %d tokens with the chat template: %s", lineNo, len(ids), holds)
		}
		if s.Len()+len(ids)+1 > s.Cap() {
			return fmt.Errorf("the conversation is full (%d of %d positions): start a new chat, or raise --max-context", s.Len(), s.Cap())
		}
		dec := m.Tokenizer.NewStreamDecoder()
		_, err := s.Generate(ids, min(o.MaxNewTokens, s.Cap()-s.Len()-len(ids)), sampling, func(id int) error {
			if err := ctx.Err(); err != nil {
				return err
			}
			_, err := io.WriteString(stdout, dec.Next(id))
			return err
		})
		if err != nil {
			return err
		}
		fmt.Fprintln(stdout, dec.Flush())
	}
}

// line is one line read by readLines: ok false at the end of the input (err nil) or on an
// error.
type line struct {
	text string
	ok   bool
	err  error
}

// readLines reads r line by line (at most maxLine bytes each) in a goroutine, so that the
// conversation can end (ctx) while it waits for input; it stops at the end of r, on an error or
// when done is closed. A nil r is empty.
func readLines(r io.Reader, done <-chan struct{}) <-chan line {
	if r == nil {
		r = strings.NewReader("")
	}
	lines := make(chan line)
	go func() {
		in := bufio.NewScanner(r)
		in.Buffer(make([]byte, 1<<16), maxLine)
		for {
			l := line{ok: in.Scan()}
			l.text, l.err = in.Text(), in.Err()
			select {
			case lines <- l:
			case <-done:
				return
			}
			if !l.ok {
				return
			}
		}
	}()
	return lines
}
