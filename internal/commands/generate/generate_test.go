package generate

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/mhalab/mhalab/internal/cli"
	"github.com/mhalab/mhalab/internal/cli/clitest"
	"github.com/mhalab/mhalab/internal/commands/internal/smolrun"
	"github.com/mhalab/mhalab/internal/testenv"
	"github.com/mhalab/mhalab/models/smollm2"
)

func TestRunRefusesBadPrompts(t *testing.T) {
	for _, c := range []struct {
		o     Options
		want  string
		usage bool
	}{
		{Options{}, "no PROMPT", true},
		{Options{Prompt: []string{"a", "b"}}, "one PROMPT expected, got 2 arguments (quote the prompt)", true},
		{Options{Prompt: []string{""}, Options: smolrun.Options{MaxNewTokens: 1}}, "empty prompt", false},
		{Options{Prompt: []string{"x"}}, "--max-new-tokens 0: want ≥ 1", false},
		{Options{Prompt: []string{"ab\xffc"}, Options: smolrun.Options{MaxNewTokens: 1}}, "PROMPT: invalid UTF-8 at byte offset 2", false},
	} {
		var out bytes.Buffer
		err := c.o.Run(context.Background(), cli.IO{Out: &out, Err: &out})
		clitest.Refused(t, fmt.Sprintf("%+v", c.o), err, out.String(), c.want, c.usage)
	}
}

// TestRunStopsWhenCancelled: Ctrl-C (a cancelled context) stops generation at the first token,
// with nothing printed on stdout.
func TestRunStopsWhenCancelled(t *testing.T) {
	if _, err := smollm2.CheckDefault(); err != nil {
		testenv.RequireOrSkip(t, fmt.Sprintf("SmolLM2-135M-Instruct not installed (scripts/setup.sh --only smollm2): %v", err))
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var out, errs bytes.Buffer
	o := Options{Options: smolrun.Options{Backend: "go", MaxNewTokens: 4}, Prompt: []string{"Once upon a time"}}
	if err := o.Run(ctx, cli.IO{Out: &out, Err: &errs}); !errors.Is(err, context.Canceled) || out.Len() != 0 {
		t.Errorf("error %v, stdout %q; want context.Canceled and nothing (stderr %s)", err, out.String(), errs.String())
	}
}
