package smollm2

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/gomlx/gomlx/backends"

	"github.com/mhalab/mhalab/internal/textinput"
)

// GenerateOptions are the options of `mhalab generate` (RunGenerate).
type GenerateOptions struct {
	Model        string // GGUF file; "" = DefaultPath() (the setup step's model, or $MHALAB_MODELS)
	MaxNewTokens int    // ≥ 1
	Sampling     Sampling
	Chat         bool // wrap the prompt as one user turn with the chat template
	JSON         bool // print one JSON object at the end instead of streaming
	Prompt       string
}

// DefaultMaxNewTokens is `mhalab generate`'s default --max-new-tokens.
const DefaultMaxNewTokens = 128

// generateJSON is what --json prints.
type generateJSON struct {
	PromptIDs []int  `json:"prompt_ids"`
	IDs       []int  `json:"ids"`
	Text      string `json:"text"`
}

// OpenModel opens the model file path, or the default one when path is "". Errors say how to
// fix them (run the setup step, or which file is corrupt).
func OpenModel(path string) (*Model, error) {
	if path == "" {
		p, err := CheckDefault()
		if err != nil {
			return nil, err
		}
		path = p
	}
	return Open(path)
}

// NewBackend creates the backend to run on and says why it was chosen (xla.NewWithReason).
type NewBackend func() (backend backends.Backend, reason string, err error)

// RunGenerate is `mhalab generate`: it generates a continuation of o.Prompt and streams it to
// stdout, then a newline (or prints only one JSON object with --json); progress goes to stderr.
// Bad input (empty prompt, a prompt longer than the context, a corrupt file, bad sampling
// options) is reported before the backend is created, so the error is the only line printed.
func RunGenerate(newBackend NewBackend, o GenerateOptions, stdout, stderr io.Writer) error {
	if o.Prompt == "" {
		return errors.New("empty prompt: give the text to continue as the last argument")
	}
	if err := textinput.CheckUTF8("PROMPT", o.Prompt); err != nil {
		return err
	}
	if o.MaxNewTokens < 1 {
		return fmt.Errorf("--max-new-tokens %d: want ≥ 1", o.MaxNewTokens)
	}
	if err := o.Sampling.Check(); err != nil {
		return err
	}
	m, err := OpenModel(o.Model)
	if err != nil {
		return err
	}
	ctxLen := m.Config.MaxPositionEmbeddings
	if o.MaxNewTokens >= ctxLen {
		return fmt.Errorf("--max-new-tokens %d: the model's context is %d tokens, prompt included (at most %d new tokens)",
			o.MaxNewTokens, ctxLen, ctxLen-1)
	}
	text, withTemplate := o.Prompt, ""
	if o.Chat {
		if text, err = m.ChatTemplate([]Message{{Role: "user", Content: o.Prompt}}, true); err != nil {
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
	s, backendName, closeSession, err := openSession(newBackend, m, len(prompt)+o.MaxNewTokens, stderr)
	if err != nil {
		return err
	}
	defer closeSession()
	fmt.Fprintf(stderr, "mhalab generate: %s, %d prompt tokens, up to %d new, backend %s\n", m.Name, len(prompt), o.MaxNewTokens, backendName)
	dec := m.Tokenizer.NewStreamDecoder()
	emit := func(id int) error {
		if o.JSON {
			return nil
		}
		_, err := io.WriteString(stdout, dec.Next(id))
		return err
	}
	ids, err := s.Generate(prompt, o.MaxNewTokens, o.Sampling, emit)
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

// ChatOptions are the options of `mhalab chat` (RunChat).
type ChatOptions struct {
	Model        string
	MaxNewTokens int // per answer
	MaxContext   int // positions of the conversation's KV cache
	Sampling     Sampling
}

// maxChatLine is the longest line `mhalab chat` reads (1 MiB): more than the model's whole
// context can hold (8192 tokens of at most 81 bytes).
const maxChatLine = 1 << 20

// DefaultChatContext is `mhalab chat`'s default --max-context.
const DefaultChatContext = 2048

// RunChat is `mhalab chat`: a multi-turn conversation read line by line from stdin (one line is
// one user turn; Ctrl-D ends it). The whole conversation stays in one session's KV cache: each
// turn feeds only its new tokens — "<|im_end|>\n" closing the previous answer, the user turn, and
// "<|im_start|>assistant\n" — which is the chat template applied to the whole history.
func RunChat(newBackend NewBackend, o ChatOptions, stdin io.Reader, stdout, stderr io.Writer) error {
	if o.MaxNewTokens < 1 {
		return fmt.Errorf("--max-new-tokens %d: want ≥ 1", o.MaxNewTokens)
	}
	if err := o.Sampling.Check(); err != nil {
		return err
	}
	m, err := OpenModel(o.Model)
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
	s, backendName, closeSession, err := openSession(newBackend, m, o.MaxContext, stderr)
	if err != nil {
		return err
	}
	defer closeSession()
	fmt.Fprintf(stderr, "mhalab chat: %s on %s; one line per message, Ctrl-D quits\n", m.Name, backendName)
	in := bufio.NewScanner(stdin)
	in.Buffer(make([]byte, 1<<16), maxChatLine)
	first := true
	for lineNo := 1; ; lineNo++ {
		fmt.Fprint(stdout, "> ")
		if !in.Scan() {
			fmt.Fprintln(stdout)
			if errors.Is(in.Err(), bufio.ErrTooLong) {
				return fmt.Errorf("stdin line %d: longer than 1 MiB: a message must fit the conversation's --max-context %d positions", lineNo, o.MaxContext)
			}
			return in.Err()
		}
		line := strings.TrimRight(in.Text(), "\r")
		if err := textinput.CheckUTF8(fmt.Sprintf("stdin line %d", lineNo), line); err != nil {
			return err
		}
		if strings.TrimSpace(line) == "" {
			continue
		}
		turn := ChatML([]Message{{Role: "user", Content: line}}, true)
		if !first {
			turn = "<|im_end|>\n" + strings.TrimPrefix(turn, "<|im_start|>system\n"+DefaultSystemPrompt+"<|im_end|>\n")
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
		_, err := s.Generate(ids, min(o.MaxNewTokens, s.Cap()-s.Len()-len(ids)), o.Sampling, func(id int) error {
			_, err := io.WriteString(stdout, dec.Next(id))
			return err
		})
		if err != nil {
			return err
		}
		fmt.Fprintln(stdout, dec.Flush())
	}
}

// openSession makes the backend (saying which on stderr), a runner of m on it and a session
// with a KV cache of capacity positions; closeSession frees all three.
func openSession(newBackend NewBackend, m *Model, capacity int, stderr io.Writer) (s *Session, backendName string, closeSession func(), err error) {
	backend, reason, err := newBackend()
	if err != nil {
		return nil, "", nil, err
	}
	fmt.Fprintf(stderr, "mhalab: backend %s\n", reason)
	r, err := m.NewRunner(backend)
	if err != nil {
		backend.Finalize()
		return nil, "", nil, err
	}
	s, err = r.NewSession(capacity)
	if err != nil {
		r.Finalize()
		backend.Finalize()
		return nil, "", nil, err
	}
	return s, backend.Name(), func() {
		s.Finalize()
		r.Finalize()
		backend.Finalize()
	}, nil
}
