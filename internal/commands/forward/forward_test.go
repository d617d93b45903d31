package forward

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gomlx/gomlx/pkg/core/tensors"

	"github.com/mhalab/mhalab/internal/cli"
	"github.com/mhalab/mhalab/internal/cli/clitest"
	"github.com/mhalab/mhalab/torchio"
)

// ramp returns a float32 tensor of dims with small distinct values.
func ramp(dims ...int) *tensors.Tensor {
	n := 1
	for _, d := range dims {
		n *= d
	}
	data := make([]float32, n)
	for i := range data {
		data[i] = float32(i%7-3) / 10
	}
	return tensors.FromFlatDataAndDimensions(data, dims...)
}

// files writes a state_dict (E = 4) and inputs [L=3, B=2, E] into a temporary folder.
func files(t *testing.T) (weights, inputs string) {
	t.Helper()
	dir := t.TempDir()
	weights, inputs = filepath.Join(dir, "w.safetensors"), filepath.Join(dir, "in.safetensors")
	if err := torchio.WriteFile(weights, map[string]*tensors.Tensor{
		"in_proj_weight": ramp(12, 4), "in_proj_bias": ramp(12), "out_proj.weight": ramp(4, 4), "out_proj.bias": ramp(4),
	}, nil); err != nil {
		t.Fatal(err)
	}
	if err := torchio.WriteFile(inputs, map[string]*tensors.Tensor{"query": ramp(3, 2, 4), "key": ramp(3, 2, 4), "value": ramp(3, 2, 4)}, nil); err != nil {
		t.Fatal(err)
	}
	return weights, inputs
}

func TestRunWritesTheOutputs(t *testing.T) {
	weights, inputs := files(t)
	out := filepath.Join(t.TempDir(), "out.safetensors")
	o := Options{Weights: weights, Inputs: inputs, Out: out, Backend: "go", MaxMemory: 1 << 30, Given: cli.Given{"num-heads": true},
		Args: Args{NumHeads: 2, NeedWeights: true}}
	var stdout, stderr bytes.Buffer
	if err := o.Run(context.Background(), cli.IO{Out: &stdout, Err: &stderr}); err != nil {
		t.Fatal(err)
	}
	if want := "attn_output [3 2 4] attn_output_weights [2 2 3 3]\n"; !strings.HasSuffix(stdout.String(), want) || stderr.String() != "mhalab: backend go (requested)\n" {
		t.Errorf("stdout %q (want it to end with %q), stderr %q", stdout.String(), want, stderr.String())
	}
	f, err := torchio.ReadFile(out)
	if err != nil || f.Tensors["attn_output"] == nil {
		t.Fatalf("reading %s: %v", out, err)
	}
}

func TestRunRefusesBeforeReading(t *testing.T) {
	weights, inputs := files(t)
	ok := Options{Weights: weights, Inputs: inputs, Out: filepath.Join(t.TempDir(), "o"), Backend: "go", MaxMemory: 1 << 30,
		Given: cli.Given{"num-heads": true}, Args: Args{NumHeads: 2}}
	for _, c := range []struct {
		edit  func(*Options)
		want  string
		usage bool
	}{
		{func(o *Options) { o.Out = "" }, "--weights, --inputs and --out are required", true},
		{func(o *Options) { o.Given = nil }, "--num-heads is required", true},
		{func(o *Options) { o.AverageAttnWeights = true }, "--average-attn-weights needs --need-weights", true},
		{func(o *Options) { o.NumHeads = 0 }, "--num-heads 0: want a positive number of heads", false},
		{func(o *Options) { o.NumHeads = 3 }, "--num-heads 3 does not divide embed_dim 4", false},
		{func(o *Options) { o.Backend = "tpu" }, "tpu", true},
		{func(o *Options) { o.Out = o.Inputs }, "refusing to overwrite an input", false},
		{func(o *Options) { o.MaxMemory = 100 }, "more than --max-memory 100 B", false},
	} {
		o := ok
		c.edit(&o)
		var out bytes.Buffer
		err := o.Run(context.Background(), cli.IO{Out: &out, Err: &out})
		clitest.Refused(t, fmt.Sprintf("%+v", o), err, out.String(), c.want, c.usage)
	}
	if _, err := os.Stat(ok.Out); err == nil {
		t.Errorf("a refused run wrote %s", ok.Out)
	}
}
