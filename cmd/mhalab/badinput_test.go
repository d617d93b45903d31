package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/mhalab/mhalab/cmd/mhalab/internal/badinputs"
	"github.com/mhalab/mhalab/internal/cli"
)

// Forward fixtures and bad files, relative to cmd/mhalab (where the tests run).
const (
	fixtureWeights = badinputs.FixtureWeights
	fixtureInputs  = badinputs.FixtureInputs
	garbageFile    = badinputs.GarbageFile
	garbageLink    = badinputs.GarbageLink
	hugeHeader     = badinputs.HugeHeader
	lessonsStudent = badinputs.LessonsStudent
)

// TestBadInputs runs every bad input (internal/badinputs.Cases()) and checks what it gets;
// BAD_INPUTS.md must be the table of them (go generate ./cmd/mhalab rewrites it).
func TestBadInputs(t *testing.T) {
	var rows []string
	for _, c := range badinputs.Cases() {
		code, stdout, stderr := runCLI(c.Args...)
		cmdline := "mhalab " + strings.Join(c.Args, " ")
		lines := badinputs.Lines(stderr)
		wantLines := map[int]int{1: 1, 2: 2}[c.Code]
		switch {
		case code != c.Code:
			t.Errorf("%s: exit %d, want %d; stderr:\n%s", cmdline, code, c.Code, stderr)
		case len(lines) != wantLines:
			t.Errorf("%s: %d lines on stderr, want %d:\n%s", cmdline, len(lines), wantLines, stderr)
		case !strings.Contains(lines[0], c.Want):
			t.Errorf("%s: stderr %q does not contain %q", cmdline, lines[0], c.Want)
		case c.Code == 2 && lines[1] != fmt.Sprintf(`Run "mhalab %s -h" for usage.`, c.Args[0]) &&
			lines[1] != `Run "mhalab help" for the list of commands.`:
			t.Errorf("%s: second line %q, want the pointer to -h or help", cmdline, lines[1])
		}
		for _, bad := range []string{"panic", "goroutine ", "internal error"} {
			if strings.Contains(stderr+stdout, bad) {
				t.Errorf("%s: output contains %q:\n%s%s", cmdline, bad, stdout, stderr)
			}
		}
		rows = append(rows, badinputs.Row(c.Args, code, stderr))
	}
	got, err := os.ReadFile(badinputs.File)
	if err != nil || string(got) != badinputs.Doc(rows) {
		t.Errorf("%s is not the table of the bad inputs tried (err %v); regenerate it with go generate ./cmd/mhalab", badinputs.File, err)
	}
}

// TestPanicIsOneLine checks that a panic in a command becomes one line (two with the hint),
// exit 1, and that MHALAB_DEBUG=1 adds the stack.
func TestPanicIsOneLine(t *testing.T) {
	saved := commands
	t.Cleanup(func() { commands = saved })
	commands = append(commands, command{name: "boom", summary: "panics", parse: func(command, []string, io.Writer) (runner, error) {
		return runFunc(func(context.Context, cli.IO) error {
			var m map[string]int
			m["x"]++ // assignment to entry in nil map
			return nil
		}), nil
	}}, command{name: "boomerr", summary: "panics with an error", parse: func(command, []string, io.Writer) (runner, error) {
		return runFunc(func(context.Context, cli.IO) error {
			panic(errors.New("graph: shapes [2 3] and\n[4] do not broadcast"))
		}), nil
	}})
	for _, name := range []string{"boom", "boomerr"} {
		t.Setenv(debugEnv, "")
		code, _, stderr := runCLI(name)
		lines := strings.Split(strings.TrimRight(stderr, "\n"), "\n")
		if code != 1 || len(lines) != 2 || !strings.HasPrefix(lines[0], "mhalab "+name+": internal error (a bug in mhalab): ") ||
			strings.Contains(stderr, "goroutine ") {
			t.Errorf("mhalab %s: exit %d, stderr:\n%s\nwant exit 1, one line and the hint", name, code, stderr)
		}
		t.Setenv(debugEnv, "1")
		code, _, stderr = runCLI(name)
		if code != 1 || !strings.Contains(stderr, "goroutine ") || !strings.Contains(stderr, "runtime/debug.Stack") {
			t.Errorf("mhalab %s with %s=1: exit %d, stderr:\n%s\nwant the stack", name, debugEnv, code, stderr)
		}
	}
}

// runFunc is a runner made of a function.
type runFunc func(context.Context, cli.IO) error

func (f runFunc) Run(ctx context.Context, io cli.IO) error { return f(ctx, io) }

// TestHelpFits100Columns checks every help text: mhalab --help and mhalab <command> -h.
func TestHelpFits100Columns(t *testing.T) {
	check := func(args ...string) {
		code, stdout, stderr := runCLI(args...)
		if code != 0 || stdout == "" {
			t.Errorf("mhalab %s: exit %d, stdout %q, stderr %q", strings.Join(args, " "), code, stdout, stderr)
		}
		for i, line := range strings.Split(stdout, "\n") {
			if n := utf8.RuneCountInString(line); n > helpWidth {
				t.Errorf("mhalab %s: line %d has %d columns (> %d): %q", strings.Join(args, " "), i+1, n, helpWidth, line)
			}
		}
	}
	check("--help")
	for _, c := range commands {
		check(c.name, "-h")
	}
}

func TestWriteWrapped(t *testing.T) {
	var b bytes.Buffer
	writeWrapped(&b, "  name  ", strings.Repeat("word ", 40))
	lines := strings.Split(strings.TrimRight(b.String(), "\n"), "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[0], "  name  word") || !strings.HasPrefix(lines[1], "        word") {
		t.Errorf("wrapped:\n%s", b.String())
	}
	for _, l := range lines {
		if len(l) > helpWidth || strings.HasSuffix(l, " ") {
			t.Errorf("line %q: longer than %d or trailing space", l, helpWidth)
		}
	}
}
