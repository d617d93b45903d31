package demo

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/mhalab/mhalab/internal/backendtest"
	"github.com/mhalab/mhalab/internal/cli"
	"github.com/mhalab/mhalab/internal/cli/clitest"
)

func TestMain(m *testing.M) { backendtest.Main(m, "internal/commands/demo") }

// small is a demo that runs in well under a second on the go backend.
var small = Options{Backend: "go", MaxMemory: 1 << 30, Config: Config{Batch: 1, Seq: 4, DModel: 8, Heads: 2, Runs: 1, Seed: 1}}

func TestRunWritesToIOOut(t *testing.T) {
	var out, errs bytes.Buffer
	if err := small.Run(context.Background(), cli.IO{Out: &out, Err: &errs}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "backend:  go (requested)") || !strings.Contains(out.String(), "(Float32)[1 4 8]") || errs.Len() != 0 {
		t.Errorf("stdout %q, stderr %q", out.String(), errs.String())
	}
}

func TestRunRefusesBadSizes(t *testing.T) {
	for _, c := range []struct {
		edit func(*Options)
		want string
		use  bool // a *cli.UsageError
	}{
		{func(o *Options) { o.Heads = 3 }, "--heads 3 does not divide --dmodel 8: each head gets d_model/heads features (try --heads 2)", false},
		{func(o *Options) { o.Runs = 0 }, "--runs 0: want a positive number", false},
		{func(o *Options) { o.MaxMemory = 0 }, "--max-memory 0: want a positive size", false},
		{func(o *Options) { o.Batch = 1 << 40 }, "more than --max-memory 1.0 GiB", false},
		{func(o *Options) { o.Backend = "tpu" }, "tpu", true},
	} {
		o := small
		c.edit(&o)
		var out bytes.Buffer
		err := o.Run(context.Background(), cli.IO{Out: &out, Err: &out})
		clitest.Refused(t, fmt.Sprintf("%+v", o), err, out.String(), c.want, c.use)
	}
}

func TestRunStopsWhenCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var out bytes.Buffer
	if err := small.Run(ctx, cli.IO{Out: &out, Err: &out}); err != context.Canceled {
		t.Errorf("cancelled: error %v, want context.Canceled", err)
	}
}
