// Package train is what training a stack of mhalib blocks needs beyond GoMLX: the gradient of
// every trainable variable (VariableGradients) and gradient checkpointing (CheckpointStack),
// which trades a second forward pass for memory.
package train

import (
	"fmt"

	"github.com/gomlx/gomlx/backends"
	. "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/shapes"
	"github.com/gomlx/gomlx/pkg/core/tensors"
	"github.com/gomlx/gomlx/pkg/ml/context"

	"github.com/mhalab/mhalab/mhalib"
)

// Gradient checkpointing: trading compute for memory in the backward pass.
//
// Reverse-mode autodiff of a stack of N blocks keeps every intermediate value of every block
// until the backward pass reaches it — for attention that includes each block's [B, h, L, L]
// weights, so memory grows as N·L². Checkpointing keeps only each block's input x_i during the
// forward pass and recomputes the block's forward pass when its gradient is needed:
//
//	forward:   x_{i+1} = block_i(x_i)                         i = 0 … N−1, keep x_0 … x_{N−1}
//	loss:      ℓ = loss(x_N),  g_N = ∂ℓ/∂x_N                   (and the loss's own variables)
//	backward:  recompute y = block_i(x_i); with g_{i+1} fixed,
//	           g_i, ∂ℓ/∂θ_i = ∂/∂(x_i, θ_i) Σ y ⊙ g_{i+1}      i = N−1 … 0
//
// The last line is a vector-Jacobian product: the gradient of Σ y ⊙ g_{i+1} with respect to the
// block's input and variables is exactly the chain rule's contribution of block i. A variable
// used by several blocks (or by a block and the loss: tied weights) gets the sum of their
// contributions.
//
// GoMLX v0.26 has no rematerialisation, and inside one graph XLA would merge a recomputation
// with the original (common-subexpression elimination), so each piece is its own compiled
// graph: N forward graphs, one loss graph, N backward graphs (2N+1 compilations, done once).
// Only one block's activations are alive at a time; the price is a second forward pass of every
// block. The block inputs stay in backend memory between graphs (tensors are not copied to Go).
//
// Blocks must be deterministic (no dropout in training mode): the recomputation must reproduce
// the forward pass exactly.

// BlockFunc builds one block of a stack: x [B, L, E] → [B, L, E], with its variables in ctx's
// scope (each block gets its own scope, "block_0", "block_1", …).
type BlockFunc func(ctx *context.Context, x *Node) *Node

// LossFunc builds a scalar loss from the stack's output y, with any variables in ctx's scope
// ("loss").
type LossFunc func(ctx *context.Context, y *Node) *Node

// CheckpointStack is a stack of blocks with a scalar loss on top whose gradients can be
// computed with checkpointing (Gradients) or with plain autodiff of one graph
// (GradientsAutodiff). Create it with NewCheckpointStack; Finalize releases its graphs.
type CheckpointStack struct {
	backend   backends.Backend
	ctx       *context.Context
	numBlocks int
	block     BlockFunc
	loss      LossFunc

	forward, backward []*context.Exec // per block
	lossExec, full    *context.Exec
	add               *Exec      // sums two gradients of a variable used by several blocks
	backwardNames     [][]string // variable names of each backward graph's gradients
	lossNames         []string
	fullNames         []string
}

// StackGradients holds the loss and its gradients with respect to the stack's input and to
// every trainable variable used, keyed by scope and name ("/block_0/attn/in_proj_weight").
type StackGradients struct {
	Loss      float64
	Input     *tensors.Tensor
	Variables map[string]*tensors.Tensor
}

// BlockScope is the scope of block i of a CheckpointStack, under the stack's context.
func BlockScope(i int) string { return fmt.Sprintf("block_%d", i) }

// LossScope is the scope of the loss of a CheckpointStack.
const LossScope = "loss"

// NewCheckpointStack returns a stack of numBlocks blocks built by block (block i in scope
// BlockScope(i) of ctx) with loss on top. Variables are created, as usual, on first use.
func NewCheckpointStack(backend backends.Backend, ctx *context.Context, numBlocks int, block BlockFunc, loss LossFunc) (*CheckpointStack, error) {
	if backend == nil || ctx == nil || block == nil || loss == nil {
		return nil, &mhalib.ArgumentError{Arg: "NewCheckpointStack", Msg: "backend, ctx, block and loss must not be nil"}
	}
	if numBlocks < 1 {
		return nil, &mhalib.ArgumentError{Arg: "numBlocks", Msg: fmt.Sprintf("%d: want at least 1", numBlocks)}
	}
	return &CheckpointStack{backend: backend, ctx: ctx, numBlocks: numBlocks, block: block, loss: loss,
		forward: make([]*context.Exec, numBlocks), backward: make([]*context.Exec, numBlocks),
		backwardNames: make([][]string, numBlocks)}, nil
}

// Forward runs the blocks one graph at a time and returns every block input x_0 … x_{N−1} and
// the output x_N.
func (s *CheckpointStack) Forward(x *tensors.Tensor) (inputs []*tensors.Tensor, output *tensors.Tensor, err error) {
	for i := range s.numBlocks {
		if s.forward[i] == nil {
			i := i
			s.forward[i], err = context.NewExec(s.backend, s.ctx, func(ctx *context.Context, x *Node) *Node {
				return s.block(ctx.In(BlockScope(i)), x)
			})
			if err != nil {
				return nil, nil, err
			}
		}
		inputs = append(inputs, x)
		out, err := s.forward[i].Exec(x)
		if err != nil {
			return nil, nil, fmt.Errorf("mhalib: CheckpointStack forward of block %d: %w", i, err)
		}
		x = out[0]
	}
	return inputs, x, nil
}

// Gradients computes the loss and its gradients with checkpointing: the forward pass keeps only
// the block inputs, and each block's backward graph recomputes the block.
func (s *CheckpointStack) Gradients(x *tensors.Tensor) (*StackGradients, error) {
	inputs, y, err := s.Forward(x)
	if err != nil {
		return nil, err
	}
	res := &StackGradients{Variables: map[string]*tensors.Tensor{}}

	// Loss, ∂ℓ/∂x_N and the loss's variable gradients.
	if s.lossExec == nil {
		s.lossExec, err = context.NewExec(s.backend, s.ctx, func(ctx *context.Context, y *Node) []*Node {
			loss := s.checkedLoss(ctx, y)
			names, grads := VariableGradients(ctx, loss)
			s.lossNames = names
			return append([]*Node{loss, Gradient(loss, y)[0]}, grads...)
		})
		if err != nil {
			return nil, err
		}
	}
	out, err := s.lossExec.Exec(y)
	if err != nil {
		return nil, fmt.Errorf("mhalib: CheckpointStack loss: %w", err)
	}
	res.Loss = shapes.ConvertTo[float64](out[0].Value())
	g := out[1] // ∂ℓ/∂x_N
	for k, name := range s.lossNames {
		if err := s.accumulate(res.Variables, name, out[2+k]); err != nil {
			return nil, err
		}
	}

	// Backward, block by block: recompute, then a vector-Jacobian product.
	for i := s.numBlocks - 1; i >= 0; i-- {
		if s.backward[i] == nil {
			i := i
			s.backward[i], err = context.NewExec(s.backend, s.ctx, func(ctx *context.Context, x, gy *Node) []*Node {
				y := s.block(ctx.In(BlockScope(i)), x)        // recomputed forward pass of block i
				vjp := ReduceAllSum(Mul(y, StopGradient(gy))) // Σ y ⊙ g_{i+1}
				names, grads := VariableGradients(ctx, vjp)
				s.backwardNames[i] = names
				return append([]*Node{Gradient(vjp, x)[0]}, grads...)
			})
			if err != nil {
				return nil, err
			}
		}
		out, err := s.backward[i].Exec(inputs[i], g)
		if err != nil {
			return nil, fmt.Errorf("mhalib: CheckpointStack backward of block %d: %w", i, err)
		}
		g = out[0]
		for k, name := range s.backwardNames[i] {
			if err := s.accumulate(res.Variables, name, out[1+k]); err != nil {
				return nil, err
			}
		}
		inputs[i] = nil // no longer needed
	}
	res.Input = g
	return res, nil
}

// accumulate adds the gradient g of variable name to vars: a variable used by several blocks
// (or by a block and the loss) gets the sum of their contributions, as the chain rule says.
func (s *CheckpointStack) accumulate(vars map[string]*tensors.Tensor, name string, g *tensors.Tensor) error {
	prev, ok := vars[name]
	if !ok {
		vars[name] = g
		return nil
	}
	if s.add == nil {
		var err error
		if s.add, err = NewExec(s.backend, Add); err != nil {
			return err
		}
	}
	sum, err := s.add.Exec(prev, g)
	if err != nil {
		return fmt.Errorf("mhalib: CheckpointStack: summing the gradients of %s: %w", name, err)
	}
	prev.FinalizeAll()
	g.FinalizeAll()
	vars[name] = sum[0]
	return nil
}

// GradientsAutodiff computes the same loss and gradients as Gradients with one graph and
// GoMLX's reverse-mode autodiff, which keeps every intermediate value of every block.
func (s *CheckpointStack) GradientsAutodiff(x *tensors.Tensor) (*StackGradients, error) {
	var err error
	if s.full == nil {
		s.full, err = context.NewExec(s.backend, s.ctx, func(ctx *context.Context, x *Node) []*Node {
			y := x
			for i := range s.numBlocks {
				y = s.block(ctx.In(BlockScope(i)), y)
			}
			loss := s.checkedLoss(ctx, y)
			names, grads := VariableGradients(ctx, loss)
			s.fullNames = names
			return append([]*Node{loss, Gradient(loss, x)[0]}, grads...)
		})
		if err != nil {
			return nil, err
		}
	}
	out, err := s.full.Exec(x)
	if err != nil {
		return nil, err
	}
	res := &StackGradients{Loss: shapes.ConvertTo[float64](out[0].Value()), Input: out[1], Variables: map[string]*tensors.Tensor{}}
	for k, name := range s.fullNames {
		res.Variables[name] = out[2+k]
	}
	return res, nil
}

// checkedLoss builds the loss in its scope and checks that it is a scalar.
func (s *CheckpointStack) checkedLoss(ctx *context.Context, y *Node) *Node {
	loss := s.loss(ctx.In(LossScope), y)
	if loss == nil || !loss.IsScalar() {
		shape := "nil"
		if loss != nil {
			shape = loss.Shape().String()
		}
		panic(&mhalib.ArgumentError{Arg: "loss", Msg: fmt.Sprintf("shape %s: the loss must be a scalar", shape)})
	}
	return loss
}

// Finalize releases the compiled graphs.
func (s *CheckpointStack) Finalize() {
	for _, e := range append(append([]*context.Exec{s.lossExec, s.full}, s.forward...), s.backward...) {
		if e != nil {
			e.Finalize()
		}
	}
	if s.add != nil {
		s.add.Finalize()
	}
}
