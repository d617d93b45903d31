package chat

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/mhalab/mhalab/internal/cli"
	"github.com/mhalab/mhalab/internal/commands/internal/smolrun"
	"github.com/mhalab/mhalab/internal/testenv"
	"github.com/mhalab/mhalab/models/smollm2"
)

func TestRunRefusesBadFlags(t *testing.T) {
	for _, c := range []struct {
		o    Options
		want string
	}{
		{Options{}, "--max-new-tokens 0: want ≥ 1"},
		{Options{Options: smolrun.Options{Sampling: smollm2.Sampling{TopP: 1}, Given: cli.Given{"temperature": true}}}, "--temperature 0: want T > 0"},
		{Options{Options: smolrun.Options{MaxNewTokens: 1, Model: "/nonexistent/m.gguf"}, MaxContext: 10}, "/nonexistent/m.gguf"},
	} {
		var out bytes.Buffer
		if err := c.o.Run(context.Background(), cli.IO{Out: &out, Err: &out}); err == nil || !strings.Contains(err.Error(), c.want) || out.Len() != 0 {
			t.Errorf("%+v: error %v, output %q; want %q", c.o, err, out.String(), c.want)
		}
	}
}

// TestRunStopsWhileWaiting: Ctrl-C (the context) ends a conversation that waits for a line
// that never comes.
func TestRunStopsWhileWaiting(t *testing.T) {
	if _, err := smollm2.CheckDefault(); err != nil {
		testenv.RequireOrSkip(t, fmt.Sprintf("SmolLM2-135M-Instruct not installed (scripts/setup.sh --only smollm2): %v", err))
	}
	in, w := io.Pipe() // nothing is ever written
	defer w.Close()
	ctx, cancel := context.WithCancel(context.Background())
	var out, errs bytes.Buffer
	errc := make(chan error)
	go func() {
		errc <- Options{Options: smolrun.Options{Backend: "go", MaxNewTokens: 4}, MaxContext: 64}.Run(ctx, cli.IO{In: in, Out: &out, Err: &errs})
	}()
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Errorf("error %v, want context.Canceled (stderr %s)", err, errs.String())
	}
}

func TestReadLines(t *testing.T) {
	done := make(chan struct{})
	defer close(done)
	lines := readLines(strings.NewReader("a\r\n\nb"), done) // bufio.ScanLines drops the \r
	var got []string
	for l := range lines {
		if !l.ok {
			if l.err != nil {
				t.Fatal(l.err)
			}
			break
		}
		got = append(got, l.text)
	}
	if strings.Join(got, "|") != "a||b" {
		t.Errorf("lines %q", got)
	}
	long := readLines(strings.NewReader(strings.Repeat("x", maxLine+1)), done)
	if l := <-long; l.ok || l.err == nil {
		t.Errorf("a line over 1 MiB: %+v, want an error", l.ok)
	}
}
