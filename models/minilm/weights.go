package minilm

import (
	"fmt"
	"slices"
	"strings"

	"github.com/gomlx/gomlx/pkg/core/dtypes"
	"github.com/gomlx/gomlx/pkg/core/tensors"
	"github.com/gomlx/gomlx/pkg/ml/context"
	"github.com/mhalab/mhalab/mhalib"
)

// The checkpoint's names (BertModel's state_dict) and where they go.
//
//	embeddings.word_embeddings.weight [V, E]        → embeddings/word_embeddings/weight
//	embeddings.position_embeddings.weight [P, E]    → embeddings/position_embeddings/weight
//	embeddings.token_type_embeddings.weight [T, E]  → embeddings/token_type_embeddings/weight
//	embeddings.LayerNorm.weight|bias [E]            → embeddings/LayerNorm/weight|bias
//	encoder.layer.N.attention.self.query.weight [E, E]  ┐
//	encoder.layer.N.attention.self.key.weight [E, E]    │ mhalib.LoadStateDict into the scope
//	encoder.layer.N.attention.self.value.weight [E, E]  │ encoder/layer/N/attention, as
//	encoder.layer.N.attention.self.{query,key,value}.bias │ q/k/v_proj_weight, in_proj_bias =
//	encoder.layer.N.attention.output.dense.weight|bias  ┘ [bq; bk; bv], out_proj.weight|bias
//	encoder.layer.N.attention.output.LayerNorm.*    → encoder/layer/N/attention/output/LayerNorm/*
//	encoder.layer.N.intermediate.dense.*  [I, E]    → encoder/layer/N/intermediate/dense/*
//	encoder.layer.N.output.dense.*        [E, I]    → encoder/layer/N/output/dense/*
//	encoder.layer.N.output.LayerNorm.*              → encoder/layer/N/output/LayerNorm/*
//
// Not used (sentence-transformers does not use them either): embeddings.position_ids (the
// positions 0…P−1) and pooler.dense.* (BERT's [CLS] pooler).
var unusedWeights = []string{"embeddings.position_ids", "pooler.dense.weight", "pooler.dense.bias"}

// bertAttention maps the names inside encoder.layer.N.attention. to nn.MultiheadAttention's.
var bertAttention = map[string]string{
	"self.query.weight":   mhalib.VarQProjWeight,
	"self.key.weight":     mhalib.VarKProjWeight,
	"self.value.weight":   mhalib.VarVProjWeight,
	"output.dense.weight": mhalib.ScopeOutProj + ".weight",
	"output.dense.bias":   mhalib.ScopeOutProj + ".bias",
}

// expectedWeights lists every tensor the encoder needs, with its shape.
func expectedWeights(c Config) map[string][]int {
	E, I := c.HiddenSize, c.IntermediateSize
	w := map[string][]int{
		"embeddings.word_embeddings.weight":       {c.VocabSize, E},
		"embeddings.position_embeddings.weight":   {c.MaxPositionEmbeddings, E},
		"embeddings.token_type_embeddings.weight": {c.TypeVocabSize, E},
		"embeddings.LayerNorm.weight":             {E},
		"embeddings.LayerNorm.bias":               {E},
	}
	for n := range c.NumHiddenLayers {
		p := fmt.Sprintf("encoder.layer.%d.", n)
		for _, qkv := range []string{"query", "key", "value"} {
			w[p+"attention.self."+qkv+".weight"] = []int{E, E}
			w[p+"attention.self."+qkv+".bias"] = []int{E}
		}
		w[p+"attention.output.dense.weight"] = []int{E, E}
		w[p+"attention.output.dense.bias"] = []int{E}
		w[p+"attention.output.LayerNorm.weight"] = []int{E}
		w[p+"attention.output.LayerNorm.bias"] = []int{E}
		w[p+"intermediate.dense.weight"] = []int{I, E}
		w[p+"intermediate.dense.bias"] = []int{I}
		w[p+"output.dense.weight"] = []int{E, I}
		w[p+"output.dense.bias"] = []int{E}
		w[p+"output.LayerNorm.weight"] = []int{E}
		w[p+"output.LayerNorm.bias"] = []int{E}
	}
	return w
}

// scopeOf returns ctx in the scope of a dotted checkpoint name and the variable's name:
// "a.b.weight" → ctx.In("a").In("b"), "weight".
func scopeOf(ctx *context.Context, name string) (*context.Context, string) {
	parts := strings.Split(name, ".")
	for _, p := range parts[:len(parts)-1] {
		ctx = ctx.In(p)
	}
	return ctx, parts[len(parts)-1]
}

// loadWeights checks the checkpoint against the configuration — every expected tensor present,
// float32, with its shape; no unknown tensor — and sets the variables of ctx.
func loadWeights(ctx *context.Context, c Config, ts map[string]*tensors.Tensor, file string) error {
	want := expectedWeights(c)
	names := make([]string, 0, len(ts))
	for name := range ts {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		if slices.Contains(unusedWeights, name) {
			continue
		}
		dims, ok := want[name]
		if !ok {
			return fmt.Errorf("minilm: %s: unexpected tensor %s (shape %s): not a BERT encoder weight", file, name, ts[name].Shape())
		}
		t := ts[name]
		if t.DType() != dtypes.Float32 || !slices.Equal(t.Shape().Dimensions, dims) {
			return fmt.Errorf("minilm: %s: tensor %s has shape %s, want (Float32)%v from config.json", file, name, t.Shape(), dims)
		}
	}
	for name := range want {
		if _, ok := ts[name]; !ok {
			return fmt.Errorf("minilm: %s: tensor %s is missing", file, name)
		}
	}

	ctx = ctx.Checked(false)
	for name := range want {
		if strings.Contains(name, ".attention.self.") || strings.Contains(name, ".attention.output.dense.") {
			continue // loaded below, per layer, through mhalib.LoadStateDict
		}
		vctx, v := scopeOf(ctx, name)
		if err := mhalib.Try(func() { vctx.VariableWithValue(v, ts[name]) }); err != nil {
			return fmt.Errorf("minilm: %s: %s: %w", file, name, err)
		}
	}
	for n := range c.NumHiddenLayers {
		prefix := fmt.Sprintf("encoder.layer.%d.attention.", n)
		sd := map[string]*tensors.Tensor{}
		for bert, mha := range bertAttention {
			sd[mha] = ts[prefix+bert]
		}
		bias, err := concatVectors(ts[prefix+"self.query.bias"], ts[prefix+"self.key.bias"], ts[prefix+"self.value.bias"])
		if err != nil {
			return fmt.Errorf("minilm: %s: %sself.*.bias: %w", file, prefix, err)
		}
		sd[mhalib.VarInProjBias] = bias // [3E] = [bq; bk; bv]
		if err := mhalib.LoadStateDict(layerCtx(ctx, n), attentionScope, sd); err != nil {
			return fmt.Errorf("minilm: %s: layer %d attention: %w", file, n, err)
		}
	}
	return nil
}

// concatVectors joins float32 vectors [n₁], [n₂], … into one [Σn].
func concatVectors(parts ...*tensors.Tensor) (*tensors.Tensor, error) {
	var all []float32
	for _, p := range parts {
		flat, err := tensors.CopyFlatData[float32](p)
		if err != nil {
			return nil, err
		}
		all = append(all, flat...)
	}
	return tensors.FromFlatDataAndDimensions(all, len(all)), nil
}
