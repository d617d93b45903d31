package decode_test

import (
	"fmt"

	"github.com/gomlx/gomlx/backends"
	"github.com/gomlx/gomlx/pkg/core/tensors"
	"github.com/gomlx/gomlx/pkg/ml/context"

	"github.com/mhalab/mhalab/mhalib/decode"
)

// Greedy decoding with a KV cache: the prompt is fed once, then one token per step.
func ExampleSession() {
	backend, err := backends.NewWithConfig("go:ops_sequential") // the pure-Go backend
	if err != nil {
		panic(err)
	}
	model := decode.Decoder{Vocab: 10, Embed: 8, Heads: 2, Layers: 1, MaxLen: 6}
	ctx := context.New()
	ctx.SetParam(context.ParamInitialSeed, int64(1))
	cache, _ := model.NewKVCache(1) // keys and values [1, 2, 6, 4]; NewWindowedKVCache keeps a window
	session, _ := decode.NewSession(backend, ctx, model, cache)
	defer session.Finalize()
	tokens := tensors.FromValue([][]int32{{1, 2, 3}}) // [B=1, prompt length 3]
	for {
		logits, err := session.Step(tokens) // [1, n, V]
		if err != nil {
			fmt.Println(err)
			break
		}
		n := logits.Shape().Dim(1)
		fmt.Println("positions filled:", session.Cache().Len(), "logits:", logits.Shape(), "for", n, "new tokens")
		tokens = tensors.FromValue([][]int32{{0}}) // the next token (greedy choice left out)
	}
	// Output:
	// positions filled: 3 logits: (Float32)[1 3 10] for 3 new tokens
	// positions filled: 4 logits: (Float32)[1 1 10] for 1 new tokens
	// positions filled: 5 logits: (Float32)[1 1 10] for 1 new tokens
	// positions filled: 6 logits: (Float32)[1 1 10] for 1 new tokens
	// mhalib: KV cache full: 6 positions decoded + 1 new > the model's MaxLen = 6
}
