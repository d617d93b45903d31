package embed

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/mhalab/mhalab/internal/cli"
	"github.com/mhalab/mhalab/internal/cli/clitest"
	"github.com/mhalab/mhalab/internal/commands/internal/minilmrun"
	"github.com/mhalab/mhalab/internal/testenv"
	"github.com/mhalab/mhalab/models/minilm"
)

func TestRunUsageErrors(t *testing.T) {
	for _, o := range []Options{{}, {Options: minilmrun.Options{Backend: "tpu"}, Sentences: []string{"a"}}} {
		var out bytes.Buffer
		err := o.Run(context.Background(), cli.IO{Out: &out, Err: &out})
		clitest.Refused(t, fmt.Sprintf("%+v", o), err, out.String(), "", true)
	}
}

func TestRunPrintsSimilarities(t *testing.T) {
	dir, err := minilm.DefaultDir()
	if err == nil {
		err = minilm.CheckFiles(dir)
	}
	if err != nil {
		testenv.RequireOrSkip(t, fmt.Sprintf("all-MiniLM-L6-v2 not installed (run scripts/setup.sh --only minilm): %v", err))
	}
	var out, errs bytes.Buffer
	o := Options{Options: minilmrun.Options{Backend: "go", MaxTokens: 4}, Sentences: []string{"A man is eating food.", "A man eats."}}
	if err := o.Run(context.Background(), cli.IO{Out: &out, Err: &errs}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"384-dimensional sentence embeddings", "1. \"A man is eating food.\"", "cosine similarity:", "1.0000"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("stdout lacks %q:\n%s", want, out.String())
		}
	}
	if !strings.Contains(errs.String(), "warning: sentence 1 has 8 tokens; truncated to the first 4") {
		t.Errorf("stderr %q: want the truncation warning", errs.String())
	}
}
