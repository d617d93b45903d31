package mhalib_test

import (
	"errors"
	"fmt"

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
