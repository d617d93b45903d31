package kvcatalog_test

import (
	"fmt"

	"github.com/gomlx/gomlx/pkg/core/dtypes"

	"github.com/mhalab/mhalab/mhalib/kvcatalog"
)

// The KV cache of the issue's example model (4096 wide, 32 layers, 32 heads, 32k context, bf16),
// with and without grouped-query attention.
func ExampleBytes() {
	for _, kvHeads := range []int{32, 8} {
		n, _ := kvcatalog.Bytes(kvcatalog.Config{Layers: 32, KVHeads: kvHeads, HeadDim: 128, Context: 32768})
		fmt.Printf("%2d KV heads: %.2f GB\n", kvHeads, float64(n)/1e9)
	}
	// Output:
	// 32 KV heads: 17.18 GB
	//  8 KV heads: 4.29 GB
}

// The KV cache of published models at 32k positions in bf16: bytes per token (summed over
// layers) and the whole cache in GB (10⁹ bytes) and GiB.
func ExamplePublished() {
	const context = 32768
	fmt.Printf("%-42s %12s %8s %8s\n", "KV cache at 32768 positions, bf16", "bytes/token", "GB", "GiB")
	for _, c := range kvcatalog.Published() {
		c.Context, c.DType = context, dtypes.BFloat16
		n, _ := kvcatalog.Bytes(c)
		fmt.Printf("%-42s %12d %8.2f %8.2f\n", c.Model, n/context, float64(n)/1e9, float64(n)/(1<<30))
	}
	// Output:
	// KV cache at 32768 positions, bf16           bytes/token       GB      GiB
	// Llama-3-8B (GQA, 8 KV heads)                     131072     4.29     4.00
	// Llama-3-8B as MHA (32 KV heads)                  524288    17.18    16.00
	// Gemma-3-27B (52 local w1024 + 10 global)          95232     3.12     2.91
	// Gemma-3-27B all global                           507904    16.64    15.50
	// SmolLM2-135M (GQA, 3 KV heads)                    23040     0.75     0.70
	// DeepSeek-V2-Lite (MLA, 512+64)                    31104     1.02     0.95
	// DeepSeek-V2-Lite as MHA (16 heads)               276480     9.06     8.44
}
