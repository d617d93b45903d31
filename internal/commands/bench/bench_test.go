package bench

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mhalab/mhalab/bench"
	"github.com/mhalab/mhalab/internal/cli"
	"github.com/mhalab/mhalab/internal/cli/clitest"
)

// valid are options that pass every check (a quick mha suite on go).
func valid(t *testing.T) Options {
	return Options{Config: bench.Config{Quick: true, JSONPath: filepath.Join(t.TempDir(), "b.json"), TorchDevice: "cpu", Threads: 1, MemTimeout: time.Minute},
		Suites: "mha", Backends: "go", Groups: bench.Groups()[0], Self: []string{"mhalab-test", "bench"}, NoProgress: true}
}

func TestRunRefusesBadFlags(t *testing.T) {
	previous := filepath.Join(t.TempDir(), "previous.json")
	if err := os.WriteFile(previous, []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		edit  func(*Options)
		want  string
		usage bool
	}{
		{func(o *Options) { o.Groups = "nope" }, `--groups: unknown group "nope"`, true},
		{func(o *Options) { o.Suites = "mha,nope" }, `--suites: unknown suite "nope"`, true},
		{func(o *Options) { o.Backends = "go,tpu" }, "--backends: ", true},
		{func(o *Options) { o.TorchDevice = "tpu" }, `--torch-device "tpu": want cpu or cuda`, true},
		{func(o *Options) { o.Threads = 0 }, "--threads 0: want at least 1", false},
		{func(o *Options) { o.Budget = -time.Second }, "want positive durations", false},
		{func(o *Options) { o.ComparePath, o.JSONPath = previous, previous }, "refusing to overwrite an input", false},
	} {
		o := valid(t)
		c.edit(&o)
		var out bytes.Buffer
		err := o.Run(context.Background(), cli.IO{Out: &out, Err: &out})
		clitest.Refused(t, fmt.Sprintf("%+v", o), err, out.String(), c.want, c.usage)
	}
	if b, _ := os.ReadFile(previous); string(b) != "{}" {
		t.Errorf("--compare's file was overwritten")
	}
}

// TestRunStopsWhenCancelled: Ctrl-C before the first measurement prints and writes nothing.
func TestRunStopsWhenCancelled(t *testing.T) {
	o := valid(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var out bytes.Buffer
	if err := o.Run(ctx, cli.IO{Out: &out, Err: &out}); !errors.Is(err, context.Canceled) || out.Len() != 0 {
		t.Errorf("error %v, output %q; want context.Canceled and nothing", err, out.String())
	}
	if _, err := os.Stat(o.JSONPath); err == nil {
		t.Errorf("a cancelled bench wrote %s", o.JSONPath)
	}
}

func TestRunChild(t *testing.T) {
	o := Options{Child: `{"backend":"go","kind":"flash","b":1,"l":64,"h":2,"d":8}`}
	var out bytes.Buffer
	if err := o.Run(context.Background(), cli.IO{Out: &out, Err: &out}); err != nil || !strings.Contains(out.String(), `"peak_rss_kib"`) {
		t.Errorf("error %v, output %q", err, out.String())
	}
	o.Child = "{"
	if err := o.Run(context.Background(), cli.IO{Out: &out, Err: &out}); err == nil || !strings.HasPrefix(err.Error(), "--child: ") {
		t.Errorf("bad JSON: error %v", err)
	}
}
