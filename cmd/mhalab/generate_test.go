package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mhalab/mhalab/internal/backendtest"
	"github.com/mhalab/mhalab/internal/cli"
	"github.com/mhalab/mhalab/internal/testenv"
	"github.com/mhalab/mhalab/models/smollm2"
)

// smollm2Model is the installed model, or skips (fails under CI=true, which runs the setup).
func smollm2Model(t *testing.T) string {
	t.Helper()
	p, err := smollm2.CheckDefault()
	if err != nil {
		testenv.RequireOrSkip(t, fmt.Sprintf("SmolLM2-135M-Instruct not installed (scripts/setup.sh --only smollm2): %v", err))
	}
	return p
}

// failsWithOneLine checks a failed run: exit 1, nothing on stdout, exactly one line on stderr that
// contains want.
func failsWithOneLine(t *testing.T, args []string, want string) {
	t.Helper()
	code, stdout, stderr := runCLI(args...)
	if code != 1 || stdout != "" || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, want) {
		shown := make([]string, len(args)) // a huge prompt shortened
		for i, a := range args {
			if shown[i] = a; len(a) > 80 {
				shown[i] = fmt.Sprintf("%s… (%d bytes)", a[:40], len(a))
			}
		}
		t.Errorf("mhalab %q: exit %d, stdout %q, stderr %q; want exit 1 and one line containing %q", shown, code, stdout, stderr, want)
	}
}

// TestGenerateBadInputs: each bad input is one clear line and exit 1 (no model needed).
func TestGenerateBadInputs(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"generate", ""}, "empty prompt"},
		{[]string{"generate", "--temperature", "1", "--top-p", "1.5", "x"}, "--top-p 1.5: want a number in (0, 1]"},
		{[]string{"generate", "--temperature", "1", "--top-p", "0", "x"}, "--top-p 0: want a number in (0, 1]"},
		{[]string{"generate", "--temperature", "-1", "x"}, "--temperature -1: want a positive number"},
		{[]string{"generate", "--temperature", "1", "--top-k", "-3", "x"}, "--top-k -3"},
		{[]string{"generate", "--greedy", "--temperature", "1", "x"}, "exclude each other"},
		{[]string{"generate", "--top-p", "0.9", "x"}, "--top-p needs --temperature"},
		{[]string{"generate", "--max-new-tokens", "0", "x"}, "--max-new-tokens 0: want ≥ 1"},
		{[]string{"generate", "--model", "/nonexistent/m.gguf", "x"}, "/nonexistent/m.gguf"},
		{[]string{"generate", "--model", "main.go", "x"}, "not a GGUF file"},
		{[]string{"chat", "--temperature", "1", "--top-p", "2"}, "--top-p 2"},
		{[]string{"generate", "--temperature", "0", "x"}, "--temperature 0: want T > 0"},
		{[]string{"chat", "--temperature", "0"}, "--temperature 0: want T > 0"},
		{[]string{"generate", "ab\xffc"}, "PROMPT: invalid UTF-8 at byte offset 2"},
		{[]string{"generate", "--model", "/nonexistent/m.gguf", "é\xe9"}, "PROMPT: invalid UTF-8 at byte offset 2"},
	} {
		failsWithOneLine(t, c.args, c.want)
	}
}

// TestGenerateBadModelFiles: a truncated GGUF, an unsupported quantisation type, and a prompt
// longer than the context are one line each, exit 1.
func TestGenerateBadModelFiles(t *testing.T) {
	path := smollm2Model(t)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	cut := filepath.Join(dir, "cut.gguf")
	if err := os.WriteFile(cut, data[:len(data)/2], 0o644); err != nil {
		t.Fatal(err)
	}
	failsWithOneLine(t, []string{"generate", "--model", cut, "x"}, "truncated")

	// blk.0.ffn_down.weight: Q4_1 (20 bytes per block) relabelled Q4_0 (18 bytes): the file
	// stays consistent, and reading the tensor is an unsupported type.
	name := []byte("blk.0.ffn_down.weight")
	i := bytes.Index(data, name)
	if i < 0 {
		t.Fatal("tensor name not found")
	}
	typ := i + len(name) + 4 + 2*8 // n_dims u32, 2 dims u64, then the type u32
	if data[typ] != 3 {
		t.Fatalf("type byte %d, want 3 (Q4_1)", data[typ])
	}
	q40 := append([]byte(nil), data...)
	q40[typ] = 2
	bad := filepath.Join(dir, "q4_0.gguf")
	if err := os.WriteFile(bad, q40, 0o644); err != nil {
		t.Fatal(err)
	}
	failsWithOneLine(t, []string{"generate", "--model", bad, "x"}, `tensor "blk.0.ffn_down.weight" has type Q4_0: unsupported tensor type`)

	long := strings.Repeat("a ", 8300)
	failsWithOneLine(t, []string{"generate", "--model", path, long}, "the model's context is 8192")
}

// cliBackend is the one backend the end-to-end command tests run on: xla:cpu when it loads,
// else go (each run loads the model and compiles the decoder; the model's numerics are checked
// on every backend in models/smollm2).
func cliBackend(t *testing.T) string {
	if _, err := backendtest.Get("xla:cpu"); err == nil {
		return "xla:cpu"
	} else if testenv.InCI() {
		t.Fatalf("CI requires xla:cpu: %v", err)
	}
	return "go"
}

// TestGenerateJSONAndStream: --json prints only the object, with the continuation of
// "Once upon a time, there was a little"; streaming prints the same text; --chat answers the
// issue's question.
func TestGenerateJSONAndStream(t *testing.T) {
	smollm2Model(t)
	b := cliBackend(t)
	{
		code, stdout, stderr := runCLI("generate", "--backend", b, "--json", "--max-new-tokens", "12", "Once upon a time, there was a little")
		if code != 0 {
			t.Fatalf("exit %d: %s", code, stderr)
		}
		var got struct {
			PromptIDs []int `json:"prompt_ids"`
			IDs       []int `json:"ids"`
			Text      string
		}
		dec := json.NewDecoder(strings.NewReader(stdout))
		if err := dec.Decode(&got); err != nil {
			t.Fatalf("stdout %q: %v", stdout, err)
		}
		if rest, _ := io.ReadAll(dec.Buffered()); strings.TrimSpace(string(rest)) != "" {
			t.Errorf("stdout holds more than the object: %q", rest)
		}
		const want = " girl named Emma who loved to play in the sun. She"
		if len(got.PromptIDs) != 9 || len(got.IDs) != 12 || got.Text != want {
			t.Errorf("got %d prompt ids, %d ids, text %q; want 9, 12, %q", len(got.PromptIDs), len(got.IDs), got.Text, want)
		}
		code, stdout, stderr = runCLI("generate", "--backend", b, "--max-new-tokens", "12", "Once upon a time, there was a little")
		if code != 0 || stdout != want+"\n" {
			t.Errorf("streamed: exit %d, stdout %q, want %q (stderr %s)", code, stdout, want+"\n", stderr)
		}
		code, stdout, stderr = runCLI("generate", "--backend", b, "--chat", "--json", "What is the capital of France?")
		if code != 0 || !strings.Contains(stdout, `"text":"The capital of France is Paris."`) || strings.Contains(stdout, "im_end") {
			t.Errorf("chat: exit %d, stdout %q (stderr %s)", code, stdout, stderr)
		}
	}
}

// runChatFrom runs `mhalab chat` with args, reading the conversation from stdin.
func runChatFrom(c command, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	r, err := c.parse(c, args, stdout)
	if err != nil {
		return err
	}
	return r.Run(context.Background(), cli.IO{In: stdin, Out: stdout, Err: stderr})
}

// TestChatREPL: two turns; the second sees the first through the KV cache.
func TestChatREPL(t *testing.T) {
	smollm2Model(t)
	var stdout, stderr bytes.Buffer
	in := strings.NewReader("What is the capital of France?\n\nAnd of Italy?\n")
	c, _ := lookup("chat")
	if err := runChatFrom(c, []string{"--backend", cliBackend(t), "--max-new-tokens", "16"}, in, &stdout, &stderr); err != nil {
		t.Fatalf("%v (stderr %s)", err, stderr.String())
	}
	out := stdout.String()
	if !strings.Contains(out, "The capital of France is Paris.") || !strings.Contains(out, "Rome") || strings.Count(out, "> ") != 4 {
		t.Errorf("chat output %q: want Paris, then Rome, and 4 prompts", out)
	}
}

// TestGenerateMustFitTheContext: what cannot fit the model's context (read from its file: 8192
// for SmolLM2) is refused at once, with the token count and the context — a huge prompt by its
// length in bytes, before the tokenizer runs.
func TestGenerateMustFitTheContext(t *testing.T) {
	path := smollm2Model(t)
	failsWithOneLine(t, []string{"generate", "--model", path, "--max-new-tokens", "1000000000", "x"},
		"--max-new-tokens 1000000000: the model's context is 8192 tokens, prompt included (at most 8191 new tokens)")
	failsWithOneLine(t, []string{"generate", "--model", path, strings.Repeat("a ", 8100)}, // 8101 tokens (the last space is one)
		"the prompt is 8101 tokens: the model's context is 8192 tokens, prompt and --max-new-tokens 128 included (lower --max-new-tokens to 91 or shorten the prompt)")
	failsWithOneLine(t, []string{"generate", "--model", path, strings.Repeat("a ", 8300)},
		"the prompt is 8301 tokens: the model's context is 8192 tokens, prompt and --max-new-tokens 128 included (shorten the prompt)")
	// 5 MiB: refused by its length (81 bytes per token at most), before the tokenizer runs.
	failsWithOneLine(t, []string{"generate", "--model", path, "--chat", strings.Repeat("word ", 1<<20)},
		"the prompt is 5243028 bytes with the chat template, at least 64729 tokens: the model's context is 8192 tokens")
}

// TestChatMessageMustFit: a message longer than the conversation's context is refused at once
// with its token count; a line that is not UTF-8 is refused with its line and byte offset.
func TestChatMessageMustFit(t *testing.T) {
	path := smollm2Model(t)
	c, _ := lookup("chat")
	chat := func(input string, args ...string) (string, error) {
		var stdout, stderr bytes.Buffer
		err := runChatFrom(c, append([]string{"--model", path, "--backend", cliBackend(t)}, args...), strings.NewReader(input), &stdout, &stderr)
		return stdout.String(), err
	}
	for _, tc := range []struct {
		input string
		args  []string
		want  string
	}{
		{strings.Repeat("a", 1000000) + "\n", []string{"--max-context", "10"},
			"stdin line 1: the message is 1000000 bytes, at least 12348 tokens: the conversation holds --max-context 10 positions (the model's context: 8192)"},
		{"hi\n\n" + strings.Repeat("hello ", 60) + "\n", []string{"--max-context", "40", "--max-new-tokens", "1"},
			"stdin line 3: the message is 72 tokens with the chat template: the conversation holds --max-context 40 positions"},
		{"ok\nab\xffc\n", []string{"--max-new-tokens", "1"}, "stdin line 2: invalid UTF-8 at byte offset 2"},
		{strings.Repeat("b", 2<<20) + "\n", nil, "stdin line 1: longer than 1 MiB: a message must fit the conversation's --max-context 2048 positions"},
		{"x\n", []string{"--max-new-tokens", "1000000000"}, "--max-new-tokens 1000000000: the model's context is 8192 tokens, messages included (at most 8191 new tokens)"},
	} {
		_, err := chat(tc.input, tc.args...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("chat %v: error %v, want %q", tc.args, err, tc.want)
		}
	}
}
