package mhalib

import (
	"errors"
	"fmt"
	"runtime"
)

// ErrInvalidArgument is wrapped by every error mhalib reports about its arguments
// (shapes, dtypes, options): test for it with errors.Is.
var ErrInvalidArgument = errors.New("mhalib: invalid argument")

// ArgumentError reports which argument is wrong and why; its message names the argument and
// the shapes involved (see ExampleArgumentError):
//
//	mhalib: key: shape (Float32)[3 5 8]: batch 3 differs from query shape (Float32)[2 3 8]
type ArgumentError struct {
	Arg string // the argument, e.g. "query", "key_padding_mask", "HeadSizes"
	Msg string // what is wrong, with the shapes involved
}

// Error implements error.
func (e *ArgumentError) Error() string { return "mhalib: " + e.Arg + ": " + e.Msg }

// Unwrap makes errors.Is(err, ErrInvalidArgument) true.
func (e *ArgumentError) Unwrap() error { return ErrInvalidArgument }

// The words for attention without queries or keys: the graphs' checks (mha.go, sdpa.go) and
// Program.Run's, before any transfer (program.go), say the same.
const (
	noQueries = "Lq = 0, no queries"
	noKeys    = "Lk = 0, no keys"
)

// panicArg is how graph-building code in mhalib reports a bad argument: it panics with an
// *ArgumentError (an error value, never a string), which GoMLX's Exec turns into a returned error.
func panicArg(arg, format string, args ...any) {
	panic(&ArgumentError{Arg: arg, Msg: fmt.Sprintf(format, args...)})
}

// Try runs fn, typically graph-building code, and returns as an error any panic that carries
// an error value (mhalib and GoMLX panic only with errors). Other panics are re-raised, and so
// are runtime errors (runtime.Error: index out of range, nil dereference, …), which are bugs to
// see with their stack, not bad input to report.
//
// Graph-building functions (Linear, MultiHeadAttention(...).Done(), ...) panic on bad input,
// GoMLX-style; Exec and Forward return those panics as errors. Try is the boundary for
// code that builds graphs without Exec.
func Try(fn func()) (err error) {
	defer func() {
		if r := recover(); r != nil {
			if _, bug := r.(runtime.Error); bug {
				panic(r)
			}
			if e, ok := r.(error); ok {
				err = e
				return
			}
			panic(r)
		}
	}()
	fn()
	return nil
}
