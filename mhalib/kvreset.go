package mhalib

import (
	"slices"

	"github.com/gomlx/gomlx/pkg/core/tensors"
	"github.com/gomlx/gomlx/pkg/ml/context"
)

// Clearing a cache on Reset.
//
// A cache's tensors outlive its sequences: Reset only moves the position counter back to 0, and
// the next sequence overwrites rows one by one. Until then the rows of the last sequence are
// attended with the mask's weight 0 — harmless for finite values, but a NaN or ±Inf left by a
// broken sequence (a model that overflowed) turns the weighted sum NaN (0·NaN = NaN, and an
// additive −inf mask over a NaN logit is NaN): every later sequence would fail too. So Reset
// sets the rows the last sequence filled back to zero, on the host, before the next step runs:
// for KVCache the tensors of Append and, of Step's chunks (kvchunks.go), the tail and the
// chunks holding a filled position (the others were never written and are still zero); for
// WindowedKVCache the rings. The cost is a fresh zero tensor per variable, O(filled positions),
// once per sequence, not per step.

// recordVariable returns vars with v appended, unless it is there already.
func recordVariable(vars []*context.Variable, v *context.Variable) []*context.Variable {
	if slices.Contains(vars, v) {
		return vars
	}
	return append(vars, v)
}

// zeroVariables replaces the value of each variable that has one by zeros of its shape (the old
// tensor is freed). A variable deleted from its context since (a finalized session) is skipped.
func zeroVariables(vars []*context.Variable) {
	for _, v := range vars {
		if v.CheckValid() != nil || !v.HasValue() {
			continue
		}
		_ = v.SetValue(tensors.FromShape(v.Shape())) // only fails for an invalid variable, checked above
	}
}

// Holds records v as a variable holding this cache's entries that the caller's own graph code
// writes (a model's specialised update of Append's tensors, say), so that Reset also sets it
// back to zero. Variables created by Append and Step are recorded already.
func (c *KVCache) Holds(v *context.Variable) { c.vars = recordVariable(c.vars, v) }
