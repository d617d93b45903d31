package flash

import (
	"math"

	"github.com/gomlx/gomlx/pkg/core/dtypes"
	. "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/shapes"
)

// State is what the online softmax keeps for every query row while it walks over the keys block
// by block. (This file is given: you write Block and Finish in flash.go.)
type State struct {
	M   *Node // [B, h, Lq, 1]: the largest logit seen so far (−Inf before the first block)
	L   *Node // [B, h, Lq, 1]: Σ exp(logit − M) over the keys seen so far
	Acc *Node // [B, h, Lq, dv]: Σ exp(logit − M)·v over the keys seen so far
}

// NewState is the state before the first block: M = −Inf, L = 0, Acc = 0, in float32.
func NewState(g *Graph, B, h, Lq, dv int) State {
	return State{
		M:   BroadcastToDims(Const(g, float32(math.Inf(-1))), B, h, Lq, 1),
		L:   Zeros(g, shapes.Make(dtypes.Float32, B, h, Lq, 1)),
		Acc: Zeros(g, shapes.Make(dtypes.Float32, B, h, Lq, dv)),
	}
}
