package train

import (
	. "github.com/gomlx/gomlx/pkg/core/graph" //nolint:revive // graph code reads better unqualified
	"github.com/gomlx/gomlx/pkg/ml/context"

	"github.com/mhalab/mhalab/mhalib"
)

// VariableGradients returns, for a scalar loss, the gradient of every trainable variable of ctx
// that the graph uses, keyed by the variable's scope and name ("/MultiHeadAttention/in_proj_weight").
// The returned names and nodes are in the same order; return the nodes from the graph function
// and pair them with the names to build the map for inspect.GradientReport.
func VariableGradients(ctx *context.Context, loss *Node) (names []string, grads []*Node) {
	if loss == nil || !loss.IsScalar() {
		panic(&mhalib.ArgumentError{Arg: "loss", Msg: "must be a scalar node"})
	}
	g := loss.Graph()
	var nodes []*Node
	for v := range ctx.IterVariables() {
		if !v.Trainable || !v.InUseByGraph(g) {
			continue
		}
		names = append(names, v.ScopeAndName())
		nodes = append(nodes, v.ValueGraph(g))
	}
	if len(nodes) == 0 {
		return nil, nil
	}
	return names, Gradient(loss, nodes...)
}
