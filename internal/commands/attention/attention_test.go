package attention

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mhalab/mhalab/internal/cli"
	"github.com/mhalab/mhalab/internal/cli/clitest"
	"github.com/mhalab/mhalab/internal/commands/internal/minilmrun"
	"github.com/mhalab/mhalab/internal/testenv"
	"github.com/mhalab/mhalab/models/minilm"
)

func TestRunRefusesBeforeLoading(t *testing.T) {
	model := t.TempDir()
	config := filepath.Join(model, minilm.FileConfig().Name)
	if err := os.WriteFile(config, []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		o     Options
		want  string
		usage bool
	}{
		{Options{Sentences: []string{"a", "b"}}, "want exactly one SENTENCE (quote it)", true},
		{Options{Options: minilmrun.Options{Backend: "tpu"}, Sentences: []string{"a"}}, "tpu", true},
		{Options{Options: minilmrun.Options{Model: model}, HTML: config, Sentences: []string{"a"}}, "is the same file as --model's config.json", false},
	} {
		var out bytes.Buffer
		err := c.o.Run(context.Background(), cli.IO{Out: &out, Err: &out})
		clitest.Refused(t, fmt.Sprintf("%+v", c.o), err, out.String(), c.want, c.usage)
	}
	if b, _ := os.ReadFile(config); string(b) != "{}" {
		t.Errorf("config.json was overwritten")
	}
}

func TestRunPrintsTheHeadsAndWritesThePage(t *testing.T) {
	dir, err := minilm.DefaultDir()
	if err == nil {
		err = minilm.CheckFiles(dir)
	}
	if err != nil {
		testenv.RequireOrSkip(t, fmt.Sprintf("all-MiniLM-L6-v2 not installed (run scripts/setup.sh --only minilm): %v", err))
	}
	page := filepath.Join(t.TempDir(), "p.html")
	var out, errs bytes.Buffer
	o := Options{Options: minilmrun.Options{Backend: "go"}, HTML: page, Sentences: []string{"The cat sat."}}
	if err := o.Run(context.Background(), cli.IO{Out: &out, Err: &errs}); err != nil {
		t.Fatal(err)
	}
	// 6 layers × 12 heads, one row each, after the header.
	if !strings.Contains(out.String(), "6 layers × 12 heads over 6 tokens") || strings.Count(out.String(), "\n") != 3+1+72 {
		t.Errorf("stdout:\n%s", out.String())
	}
	if errs.String() != "wrote the explorer page "+page+"\n" {
		t.Errorf("stderr %q", errs.String())
	}
	if st, err := os.Stat(page); err != nil || st.Size() == 0 {
		t.Errorf("page: %v", err)
	}
}
