package sdpa

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gomlx/gomlx/pkg/core/tensors"

	"github.com/mhalab/mhalab/internal/cli"
	"github.com/mhalab/mhalab/internal/cli/clitest"
	"github.com/mhalab/mhalab/torchio"
)

// inputs writes float32 query, key, value [B=1, H=2, L=3, E=4] (the key's first value NaN when
// withNaN) and returns the file.
func inputs(t *testing.T, withNaN bool) string {
	t.Helper()
	ramp := func() *tensors.Tensor {
		data := make([]float32, 24)
		for i := range data {
			data[i] = float32(i%5-2) / 4
		}
		return tensors.FromFlatDataAndDimensions(data, 1, 2, 3, 4)
	}
	key := ramp()
	if withNaN {
		tensors.MutableFlatData(key, func(flat []float32) { flat[0] = float32(math.NaN()) })
	}
	path := filepath.Join(t.TempDir(), "in.safetensors")
	if err := torchio.WriteFile(path, map[string]*tensors.Tensor{"query": ramp(), "key": key, "value": ramp()}, nil); err != nil {
		t.Fatal(err)
	}
	return path
}

func options(in, out string) Options {
	return Options{Inputs: in, Out: out, Backend: "go", Config: Config{WindowLeft: Unbounded, WindowRight: Unbounded, RoPETheta: 10000}}
}

func TestRunWritesAttnOutput(t *testing.T) {
	for _, flash := range []bool{false, true} {
		out := filepath.Join(t.TempDir(), "out.safetensors")
		o := options(inputs(t, false), out)
		o.IsCausal, o.Flash = true, flash
		var stdout, stderr bytes.Buffer
		if err := o.Run(context.Background(), cli.IO{Out: &stdout, Err: &stderr}); err != nil {
			t.Fatal(err)
		}
		if want := "mhalab sdpa: query [1 2 3 4], key [1 2 3 4] → " + out + ": attn_output [1 2 3 4]\n"; stdout.String() != want {
			t.Errorf("flash %v: stdout %q, want %q", flash, stdout.String(), want)
		}
	}
}

func TestRunWarnsAboutNonFiniteOutputs(t *testing.T) {
	o := options(inputs(t, true), filepath.Join(t.TempDir(), "out.safetensors"))
	var stdout, stderr bytes.Buffer
	if err := o.Run(context.Background(), cli.IO{Out: &stdout, Err: &stderr}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(stderr.String(), "mhalab sdpa: warning: attn_output has ") || !strings.Contains(stderr.String(), "--inputs key has 1 of 24") {
		t.Errorf("stderr %q: want the warning naming the key", stderr.String())
	}
}

func TestRunRefusesBadFlags(t *testing.T) {
	in := inputs(t, false)
	ok := options(in, filepath.Join(t.TempDir(), "o"))
	for _, c := range []struct {
		edit  func(*Options)
		want  string
		usage bool
	}{
		{func(o *Options) { o.Inputs = "" }, "--inputs and --out are required", true},
		{func(o *Options) { o.RoPE = "full" }, `--rope "full": want half or interleaved`, true},
		{func(o *Options) { o.Given = cli.Given{"rope-theta": true} }, "--rope-theta needs --rope", true},
		{func(o *Options) { o.WindowLeft, o.Given = -1, cli.Given{"window-left": true} }, "--window-left -1: a window side must be >= 0", false},
		{func(o *Options) { o.Given = cli.Given{"softcap": true} }, "--softcap 0: want a positive cap", false},
		{func(o *Options) { o.RoPETheta = 0 }, "--rope-theta 0: want a positive base", false},
		{func(o *Options) { o.Out = in }, "refusing to overwrite an input", false},
		{func(o *Options) { o.Scale, o.Given = math.Inf(1), cli.Given{"scale": true} }, "scale +Inf: want a finite number", false},
	} {
		o := ok
		c.edit(&o)
		var out bytes.Buffer
		err := o.Run(context.Background(), cli.IO{Out: &out, Err: &out})
		clitest.Refused(t, fmt.Sprintf("%+v", o), err, out.String(), c.want, c.usage)
	}
}
