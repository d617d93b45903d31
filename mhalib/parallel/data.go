package parallel

import (
	. "github.com/gomlx/gomlx/pkg/core/graph" //nolint:revive // graph code reads better unqualified
	"github.com/gomlx/gomlx/pkg/ml/context"

	"github.com/mhalab/mhalab/mhalib"
)

// DataParallelGradients is one data-parallel training step's graph for mhalib.PreLNBlock: each
// device holds all the block's variables (replicated) and its own batchSize/N sequences,
//
//	x, target [B/N, L, E] → loss = mean over the whole batch of (PreLNBlock(x) − target)²
//
// and returns the loss and the gradient of every trainable variable of ctx the block uses
// (names as ScopeAndName, in the same order), both the same on every device: each device
// differentiates its own share of the loss, Σ (y − target)² / (B·L·E), and one all-reduce (sum)
// per gradient adds the shares. batchSize is B, the whole batch over all devices.
func DataParallelGradients(ctx *context.Context, x, target *Node, numHeads, batchSize int, causal mhalib.Causal) (loss *Node, names []string, grads []*Node) {
	if x == nil || target == nil || x.Rank() != 3 || !x.Shape().Equal(target.Shape()) {
		panic(&mhalib.ArgumentError{Arg: "x, target", Msg: "DataParallelGradients wants two [batch/N, length, embedDim] nodes of one shape"})
	}
	if batchSize != x.Shape().Dim(0)*Devices(x) {
		panic(&mhalib.ArgumentError{Arg: "batchSize", Msg: "must be the shard's batch × the number of devices, " + x.Shape().String()})
	}
	y := mhalib.PreLNBlock(ctx, x, numHeads).Causal(causal).Done() // [B/N, L, E]
	count := float64(batchSize * x.Shape().Dim(1) * x.Shape().Dim(2))
	local := DivScalar(ReduceAllSum(Square(Sub(y, target))), count) // this device's share of the loss
	g := x.Graph()
	var nodes []*Node
	for v := range ctx.IterVariables() {
		if !v.Trainable || !v.InUseByGraph(g) {
			continue
		}
		names = append(names, v.ScopeAndName())
		nodes = append(nodes, v.ValueGraph(g))
	}
	for _, d := range Gradient(local, nodes...) {
		grads = append(grads, AllReduceSum(d))
	}
	return AllReduceSum(local), names, grads
}
