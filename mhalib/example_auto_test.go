package mhalib_test

import (
	"fmt"

	"github.com/mhalab/mhalab/mhalib"
)

// The default formulation, Auto, computes small shapes with plain attention and large ones,
// block by block, with Flash; AutoFormulation tells which for given lengths.
func ExampleAutoFormulation() {
	fmt.Println(mhalib.AutoFormulation(128, 128, mhalib.NoCausal))         // B32 L128: the scores fit in cache
	fmt.Println(mhalib.AutoFormulation(1024, 1024, mhalib.CausalTopLeft))  // an LLM's context, causal
	fmt.Println(mhalib.AutoFormulation(1, 4096, mhalib.CausalBottomRight)) // one new token against a long cache
	// Output:
	// HeadParallel
	// Flash
	// HeadParallel
}
