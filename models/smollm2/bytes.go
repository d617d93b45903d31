package smollm2

import (
	"github.com/mhalab/mhalab/models/gguf"
)

// The memory roofline of decoding: one step (one new token, batch 1) reads every matrix of the
// model once — the q/k/v/o projections and the three MLP matrices of each layer, and the
// head [V, D] — plus one row of the embedding and the norms' vectors. Its time is at least
// those bytes ÷ the memory bandwidth (the KV cache's bytes come on top and grow with the
// position; they are not counted here).

// matrixElements returns the number of weights of every matrix a step multiplies by: the
// layers' seven and the head.
func (c Config) matrixElements() (layers, head int64) {
	D, F := int64(c.HiddenSize), int64(c.IntermediateSize)
	Q, KV := int64(c.NumAttentionHeads*c.HeadDim), int64(c.NumKeyValueHeads*c.HeadDim)
	perLayer := 2*Q*D + 2*KV*D + 3*F*D // q, o; k, v; gate, up, down
	return int64(c.NumHiddenLayers) * perLayer, int64(c.VocabSize) * D
}

// vectorBytes is what a step reads besides the matrices: one embedding row and the norms'
// weights, float32.
func (c Config) vectorBytes() int64 {
	return 4 * int64(c.HiddenSize) * int64(2*c.NumHiddenLayers+2)
}

// WeightBytesPerToken is the bytes of weights one decoding step reads when every matrix is
// stored in format t (gguf.TensorF32, TensorF16, TensorQ8_0, TensorQ4_1: BlockBytes per
// BlockSize weights): SmolLM2-135M reads ~540 MB a token in float32, ~143 MB in Q8_0, ~84 MB
// in Q4_1.
func (c Config) WeightBytesPerToken(t gguf.TensorType) int64 {
	layers, head := c.matrixElements()
	return (layers+head)*int64(t.BlockBytes())/int64(t.BlockSize()) + c.vectorBytes()
}

// WeightBytesPerToken is the bytes of weights one decoding step of r reads: the matrices as
// the runner holds them — as stored in the file (Q4_1 layers and a Q8_0 head for the
// installed SmolLM2) when it is packed, float32 otherwise.
func (r *Runner) WeightBytesPerToken() int64 {
	m := r.Model
	if !r.packed {
		return m.Config.WeightBytesPerToken(gguf.TensorF32)
	}
	n := m.Config.vectorBytes()
	for name, t := range m.Weights.Tensors {
		if name == "lm_head.weight" && t == m.Weights.Tensors["model.embed_tokens.weight"] {
			continue // tied: counted once, as the embedding's matrix
		}
		if len(t.Shape) != 2 {
			continue // a norm: in vectorBytes
		}
		if p, ok := m.Weights.packed(name); ok {
			n += int64(len(p.Data))
		} else {
			n += 4 * int64(len(t.Data))
		}
	}
	return n
}
