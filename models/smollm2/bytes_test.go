package smollm2

import (
	"testing"

	"github.com/mhalab/mhalab/internal/backendtest"
	"github.com/mhalab/mhalab/models/gguf"
)

// TestWeightBytesPerToken: the bytes a step reads, from the configuration, equal those of the
// file's tensors for the packed runner (Q4_1 layers, Q8_0 head: the GGUF sizes, counted here
// from the file's tensor table) and 4 per weight for the float32 runner.
func TestWeightBytesPerToken(t *testing.T) {
	m := testModel(t)
	f, err := gguf.Open(modelFile(t))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var file, elements int64
	for _, ti := range f.Tensors {
		if len(ti.Shape()) == 2 {
			file += int64(ti.Bytes)
			elements += int64(ti.NumElements())
		}
	}
	vectors := m.Config.vectorBytes()
	c := m.Config
	if got, want := c.WeightBytesPerToken(gguf.TensorF32), 4*elements+vectors; got != want {
		t.Errorf("float32: %d bytes, want %d", got, want)
	}
	if got, want := c.WeightBytesPerToken(gguf.TensorQ8_0), elements*34/32+vectors; got != want {
		t.Errorf("Q8_0: %d bytes, want %d", got, want)
	}
	backend, err := backendtest.Get("go")
	if err != nil {
		t.Skip(err)
	}
	r := testRunner(t, backend)
	want := file + vectors
	if !r.Packed() {
		want = 4*elements + vectors
	}
	if got := r.WeightBytesPerToken(); got != want {
		t.Errorf("runner (packed %v): %d bytes, want %d", r.Packed(), got, want)
	}
	t.Logf("bytes a decoding step reads: float32 %.1f MB, Q8_0 %.1f MB, Q4_1 %.1f MB, this file %.1f MB",
		float64(c.WeightBytesPerToken(gguf.TensorF32))/1e6, float64(c.WeightBytesPerToken(gguf.TensorQ8_0))/1e6,
		float64(c.WeightBytesPerToken(gguf.TensorQ4_1))/1e6, float64(want)/1e6)
}
