package mhalib_test

import (
	"errors"
	"fmt"

	"github.com/gomlx/gomlx/pkg/core/tensors"
	"github.com/gomlx/gomlx/pkg/ml/context"

	"github.com/mhalab/mhalab/mhalib"
)

// The host side of a KV cache: positions are reserved before each step, and a step that does
// not fit is refused.
func ExampleKVCache() {
	cache, _ := mhalib.NewKVCache(1, 2, 4, 8, 8) // [B=1, h=2, maxLen=4, dk=dv=8]
	prompt, _ := cache.Advance(3)                // the prompt takes positions 0, 1, 2
	next, _ := cache.Advance(1)                  // one generated token: position 3
	fmt.Println(prompt, next, cache.Len(), cache.Cap())
	_, err := cache.Advance(1)
	fmt.Println(errors.Is(err, mhalib.ErrCacheFull), err)
	cache.Reset()
	fmt.Println(cache.Len())
	// Output:
	// 0 3 4 4
	// true mhalib: KV cache full: 4 positions filled + 1 new > capacity maxLen = 4
	// 0
}

// Greedy decoding with a KV cache: the prompt is fed once, then one token per step.
func ExampleDecodeSession() {
	model := mhalib.Decoder{Vocab: 10, Embed: 8, Heads: 2, Layers: 1, MaxLen: 6}
	ctx := context.New()
	ctx.SetParam(context.ParamInitialSeed, int64(1))
	session, _ := mhalib.NewDecodeSession(sequentialGo(), ctx, model, 1)
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
	// mhalib: KV cache full: 6 positions filled + 1 new > capacity maxLen = 6
}
