package mhalib

import (
	"fmt"
	"sync/atomic"

	"github.com/gomlx/gomlx/backends"
	. "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/tensors"
	"github.com/gomlx/gomlx/pkg/ml/context"
)

// A Program is multi-head attention compiled for host tensors: configured once, run many times.
//
//	p, err := NewProgram(backend, ctx, numHeads, func(b *MHABuilder) { b.Causal(CausalTopLeft) })
//	defer p.Finalize()
//	out, w, err := p.Run(x, x, x)   // compiles for x's shape, then runs
//	out, w, err = p.Run(y, y, y)    // same shape as x: runs the same executable
//
// The first Run with a given signature (the shapes and dtypes of query, key and value, and
// whether they are one tensor) builds and compiles the graph; later Runs with that signature
// reuse the executable. A new signature compiles once more and is kept too, up to
// graph.DefaultExecMaxCacheSize (32) signatures; past that Run returns GoMLX's error instead
// of compiling. Compiling takes milliseconds on the pure-Go backend and much longer on XLA:
// a loop over batches of one shape should hold one Program, not call Forward each time.
//
// A Program reads the variables of ctx at every Run (loading new weights into ctx needs no
// recompilation); options that depend on what the scope holds (fused or separate projections,
// bias) are decided at the first compilation. A Program is not safe for concurrent Runs.
type Program struct {
	exec         *context.Exec
	flash        bool         // the graph returns the output only
	compilations atomic.Int64 // graphs built
}

// NewProgram prepares MultiHeadAttention(ctx, query, key, value, numHeads) configured by
// configure (may be nil; build mask constants with b.Graph()) for Run. It compiles nothing yet.
// Variables are created (initialised) in ctx at the first Run, as needed.
func NewProgram(backend backends.Backend, ctx *context.Context, numHeads int, configure func(b *MHABuilder)) (*Program, error) {
	if backend == nil || ctx == nil {
		return nil, &ArgumentError{Arg: "NewProgram", Msg: "backend and ctx must not be nil"}
	}
	p := &Program{}
	exec, err := context.NewExec(backend, ctx, func(ctx *context.Context, inputs []*Node) []*Node {
		p.compilations.Add(1)
		q, k, v := inputs[0], inputs[0], inputs[0]
		if len(inputs) == 3 {
			k, v = inputs[1], inputs[2]
		}
		b := MultiHeadAttention(ctx, q, k, v, numHeads)
		if configure != nil {
			configure(b)
		}
		if b.formulation == Flash {
			p.flash = true
			return []*Node{b.Done()} // Flash never forms the weights
		}
		out, w := b.DoneWithWeights()
		return []*Node{out, w}
	})
	if err != nil {
		return nil, err
	}
	p.exec = exec
	return p, nil
}

// Run computes the attention of query [B, Lq, E] over key [B, Lk, kdim] and value [B, Lk, vdim]
// and returns the output [B, Lq, E] and the weights of every head [B, h, Lq, Lk'] — weights is
// nil with Formulation(Flash), which never forms them. Pass the same tensor three times for
// self-attention. Any bad argument comes back as an error (an *ArgumentError wrapping
// ErrInvalidArgument); so does a graph-building panic of configure.
func (p *Program) Run(query, key, value *tensors.Tensor) (output, weights *tensors.Tensor, err error) {
	if p == nil || p.exec == nil {
		return nil, nil, &ArgumentError{Arg: "Program", Msg: "is nil or finalized: make one with NewProgram"}
	}
	if query == nil || key == nil || value == nil {
		return nil, nil, &ArgumentError{Arg: "Run", Msg: "query, key and value must not be nil"}
	}
	if err := emptyArgument(query, key, value); err != nil {
		return nil, nil, err
	}
	args := []any{query}
	if query != key || key != value {
		args = append(args, key, value)
	}
	results, err := p.exec.Exec(args...)
	if err != nil {
		return nil, nil, err
	}
	if len(results) == 1 {
		return results[0], nil, nil
	}
	return results[0], results[1], nil
}

// emptyArgument returns the error for the first of query, key and value [B, L, ·] that has no
// elements — with the graph's own words for Lq = 0 and Lk = 0 — or nil. Run checks before any
// transfer: go-xla v0.1.4 panics copying a tensor with no elements to a device that does not share
// the host's memory (xla:cuda; an xla:cpu backend with "noshared_buffers" shows it), where the
// other backends would build the graph and return its error.
func emptyArgument(query, key, value *tensors.Tensor) error {
	for _, a := range []struct {
		name, lengthZero string
		t                *tensors.Tensor
	}{{"query", noQueries, query}, {"key", noKeys, key}, {"value", "Lk = 0, no values", value}} {
		shape := a.t.Shape()
		if shape.Size() != 0 {
			continue
		}
		if shape.Rank() == 3 && shape.Dim(1) == 0 {
			return &ArgumentError{Arg: a.name, Msg: fmt.Sprintf("shape %s: %s", shape, a.lengthZero)}
		}
		return &ArgumentError{Arg: a.name, Msg: fmt.Sprintf("shape %s has no elements", shape)}
	}
	return nil
}

// Compilations returns how many graphs Run has built and compiled so far: one per signature.
func (p *Program) Compilations() int { return int(p.compilations.Load()) }

// Finalize frees the compiled executables. The Program cannot Run afterwards.
func (p *Program) Finalize() {
	if p != nil && p.exec != nil {
		p.exec.Finalize()
		p.exec = nil
	}
}

// Forward is the one-call convenience over Program: it prepares a Program, runs it once on
// query, key and value, and frees it (see Program.Run for the results and errors). It compiles
// at every call: to run the same attention more than once, hold a Program.
func Forward(backend backends.Backend, ctx *context.Context, query, key, value *tensors.Tensor, numHeads int,
	configure func(b *MHABuilder)) (output, weights *tensors.Tensor, err error) {
	if backend == nil || ctx == nil || query == nil || key == nil || value == nil {
		return nil, nil, &ArgumentError{Arg: "Forward", Msg: "backend, ctx, query, key and value must not be nil"}
	}
	p, err := NewProgram(backend, ctx, numHeads, configure)
	if err != nil {
		return nil, nil, err
	}
	defer p.Finalize()
	return p.Run(query, key, value)
}
