package mhalib

import (
	"strings"

	"github.com/gomlx/gomlx/backends"
)

// The Auto formulation: plain (HeadParallel) or Flash attention, chosen by shape (on a GPU, by
// the memory plain attention's scores take).
//
// Plain attention writes the scores of every (batch, head) pair, [B, h, Lq, Lk], and reads and
// writes them again for the softmax: a handful of passes over B·h·Lq·Lk floats. While those fit
// in the caches that costs little, and plain attention does the least work. With many queries
// and many keys the passes go to main memory and dominate; Flash (flash.go) then does the same
// arithmetic on tiles of BlockK keys, and with a causal mask it skips the tiles above the
// diagonal, which plain attention computes and throws away. The rule:
//
//	Flash      when Lq ≥ autoFlashMinQueries and Lk ≥ autoFlashMinKeys, or, with a causal
//	           mask, when both are ≥ autoFlashMinCausal
//	HeadParallel otherwise, and whenever Flash is not allowed: DoneWithWeights, uneven heads,
//	           attention dropout, or a HeadStrategy set
//
// The thresholds come from `mhalab bench` on XLA's CPU backend (the README's table "Making
// XLA CPU fast" gives the measurements); a program that knows better sets Formulation.
//
// On a GPU (XLA's CUDA plugin) the scores' passes cost little next to the GPU's memory
// bandwidth, and XLA runs Flash's key blocks one after another: on an H200, plain attention
// took 2.17 ms against Flash's 2.81 at B8 L1024 E768 h12, and 1.66 against 3.29 ms at B1 L4096
// E512 h8 (causal: 2.15 vs 2.59, 2.01 vs 2.44; docs/bench/2026-12-15-h200.json). There Auto
// chooses Flash only where memory decides, when plain attention's scores [B, h, Lq, Lk] would
// take more than autoGPUMaxScoreBytes — the largest scores measured faster plain.

const (
	autoFlashMinQueries = 512 // queries (Lq) from which Flash is chosen without a causal mask
	autoFlashMinKeys    = 512 // keys (Lk) from which Flash is chosen without a causal mask
	autoFlashMinCausal  = 512 // Lq and Lk from which Flash is chosen with a causal mask

	autoGPUMaxScoreBytes = 512 << 20 // on a GPU: plain attention up to 512 MiB of float32 scores
)

// autoFormulation resolves Auto for validated dimensions d, lk keys (with the add_bias_kv /
// add_zero_attn rows), whether the weights are asked for and whether the graph runs on a GPU.
func (b *MHABuilder) autoFormulation(d mhaDims, lk int, withWeights, gpu bool) Formulation {
	if withWeights || !d.even || b.cfg.dropout.rate > 0 || b.strategySet {
		return HeadParallel
	}
	if gpu {
		return autoOnGPU(d.batch, len(d.sizes), d.lq, lk)
	}
	return AutoFormulation(d.lq, lk, b.cfg.causal)
}

// AutoFormulationOn is AutoFormulation for a graph on backend, with batch examples and heads
// query heads: on a GPU (an XLA backend with the CUDA plugin) HeadParallel unless plain
// attention's float32 scores would take more than 512 MiB, else AutoFormulation's rule.
func AutoFormulationOn(backend backends.Backend, batch, heads, lq, lk int, causal Causal) Formulation {
	if onGPU(backend) {
		return autoOnGPU(batch, heads, lq, lk)
	}
	return AutoFormulation(lq, lk, causal)
}

// autoOnGPU is the rule on a GPU: Flash only when the scores [batch, heads, lq, lk] (float32)
// exceed autoGPUMaxScoreBytes.
func autoOnGPU(batch, heads, lq, lk int) Formulation {
	if int64(batch)*int64(heads)*int64(lq)*int64(lk)*4 > autoGPUMaxScoreBytes {
		return Flash
	}
	return HeadParallel
}

// onGPU reports whether backend is XLA with NVIDIA's CUDA plugin, from its description: GoMLX
// describes it "xla:cuda - …" when it loads the plugin by name and "xla:/…/pjrt_c_api_cuda_plugin.so
// - …" when by path (as mhalab's xla package does).
func onGPU(backend backends.Backend) bool {
	if backend == nil || backend.Name() != "xla" {
		return false
	}
	return gpuDescription(backend.Description())
}

// OnXLACPU reports whether backend is XLA compiling for the CPU (its CPU plugin): not the pure-Go
// backend and not a GPU. Some products take another form there (a one-row Linear's bias; the
// smollm2 model's weight layout), for the way XLA's CPU compiler fuses and packs them.
func OnXLACPU(backend backends.Backend) bool {
	return backend != nil && backend.Name() == "xla" && !onGPU(backend)
}

// gpuDescription reports whether an XLA backend's description names the CUDA plugin.
func gpuDescription(desc string) bool {
	name, _, _ := strings.Cut(desc, " - ")
	return name == "xla:cuda" || strings.HasSuffix(name, "/pjrt_c_api_cuda_plugin.so")
}

// AutoFormulation returns what the Auto formulation computes Done with for lq queries and lk
// keys, with the causal mask causal (NoCausal: none), when Flash is allowed (equal heads, no
// dropout): Flash or HeadParallel, by the rule above.
func AutoFormulation(lq, lk int, causal Causal) Formulation {
	if causal != NoCausal && lq >= autoFlashMinCausal && lk >= autoFlashMinCausal {
		return Flash
	}
	if lq >= autoFlashMinQueries && lk >= autoFlashMinKeys {
		return Flash
	}
	return HeadParallel
}

// flashBlocks returns the block sizes MultiHeadAttention's Flash formulation uses for lq
// queries (FlashBlockSizes overrides them): DefaultFlashBlockK keys per block, and
// query blocks of DefaultFlashBlockQ rows, or, with a causal mask, of lq/8 rows between 128 and
// DefaultFlashBlockQ: finished query blocks are dropped, and a block as long as the sequence
// drops nothing (without a causal mask every row needs every key block and BlockQ plays no
// role). 256 keys per block ran as fast as 128 at L = 4096 but compiled no faster and doubles
// the tiles, so the key blocks stay at 128 — except on XLA, whose chains of steps compile in
// half the time with 256 (xlaFlashBlocks, flashxla.go).
func flashBlocks(lq int, causal bool) (blockQ, blockK int) {
	blockQ, blockK = DefaultFlashBlockQ, DefaultFlashBlockK
	if causal {
		blockQ = min(max(lq/8, 128), DefaultFlashBlockQ)
	}
	return blockQ, blockK
}
