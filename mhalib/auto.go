package mhalib

// The Auto formulation: plain (HeadParallel) or Flash attention, chosen by shape.
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

const (
	autoFlashMinQueries = 512 // queries (Lq) from which Flash is chosen without a causal mask
	autoFlashMinKeys    = 512 // keys (Lk) from which Flash is chosen without a causal mask
	autoFlashMinCausal  = 512 // Lq and Lk from which Flash is chosen with a causal mask
)

// autoFormulation resolves Auto for validated dimensions d, lk keys (with the add_bias_kv /
// add_zero_attn rows) and whether the weights are asked for.
func (b *MHABuilder) autoFormulation(d mhaDims, lk int, withWeights bool) Formulation {
	if withWeights || !d.even || b.cfg.dropout.rate > 0 || b.strategySet {
		return HeadParallel
	}
	return AutoFormulation(d.lq, lk, b.cfg.causal)
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
// the tiles, so the key blocks stay at 128.
func flashBlocks(lq int, causal bool) (blockQ, blockK int) {
	blockQ, blockK = DefaultFlashBlockQ, DefaultFlashBlockK
	if causal {
		blockQ = min(max(lq/8, 128), DefaultFlashBlockQ)
	}
	return blockQ, blockK
}
