package parallel

import (
	"fmt"

	"github.com/gomlx/gomlx/backends"
	. "github.com/gomlx/gomlx/pkg/core/graph" //nolint:revive // graph code reads better unqualified
	"github.com/gomlx/gomlx/pkg/core/tensors"
	"github.com/gomlx/gomlx/pkg/ml/context"
)

// NewContextRunner is NewRunner for graph code that uses the variables of ctx (mhalib's layers):
// every device gets a copy of every variable the graph uses (replicated weights). Variables
// without a value are initialised (on device 0) at the first run, as context.Exec does.
//
// Why not context.Exec.SPMD: in GoMLX v0.26 it gives each variable a replicated sharding spec,
// and the XLA builder of an SPMD program knows no mesh, so creating the variable's parameter
// fails ("mesh … not found"). Here the variables become plain parameters of the SPMD program,
// fed by a side-parameter hook with one copy per device.
func NewContextRunner(backend backends.Backend, n int, ctx *context.Context, fn func(ctx *context.Context, inputs []*Node) []*Node) (*Runner, error) {
	r, err := NewRunner(backend, n, func(inputs []*Node) []*Node { return fn(ctx, inputs) })
	if err != nil {
		return nil, err
	}
	copies := map[*context.Variable][]*tensors.Tensor{} // per variable, its value on each device
	r.exec.SetSideParamsHook(func(g *Graph, buffers []backends.Buffer, donate []bool) error {
		if ctx.NeedsInitialization() {
			if err := ctx.InitializeVariables(backend, nil); err != nil {
				return fmt.Errorf("parallel: initialising variables: %w", err)
			}
		}
		numParams := g.NumParameters()
		handles := map[string]int{}
		for h := range numParams {
			handles[g.GetParameterByHandle(ParameterHandle(h)).GetParameterName()] = h
		}
		for v := range ctx.IterVariables() {
			h, ok := handles[v.ParameterName()]
			if !ok || !v.InUseByGraph(g) {
				continue
			}
			value, err := v.Value()
			if err != nil || value == nil {
				return fmt.Errorf("parallel: variable %s has no value (initialise the context first): %v", v.ScopeAndName(), err)
			}
			if copies[v] == nil {
				for d := range n {
					c, err := value.OnDeviceClone(backend, backends.DeviceNum(d))
					if err != nil {
						return fmt.Errorf("parallel: copying variable %s to device %d: %w", v.ScopeAndName(), d, err)
					}
					copies[v] = append(copies[v], c)
				}
			}
			for d := range n {
				buf, err := copies[v][d].Buffer(backend, backends.DeviceNum(d))
				if err != nil {
					return fmt.Errorf("parallel: variable %s on device %d: %w", v.ScopeAndName(), d, err)
				}
				buffers[d*numParams+h], donate[d*numParams+h] = buf, false
			}
		}
		return nil
	})
	r.release = func() {
		for _, cs := range copies {
			for _, c := range cs {
				c.FinalizeAll()
			}
		}
	}
	return r, nil
}
