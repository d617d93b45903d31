package nb

import (
	"errors"
	"fmt"
	"strings"

	"github.com/gomlx/gomlx/pkg/core/tensors"
	"github.com/mhalab/mhalab/mhalib/mhatest"
)

// Exercises where the reader writes code. A notebook ships three cells for each:
//
//  1. the exercise: a function whose body is `panic(nb.WriteMe)` (it compiles, so the notebook
//     runs as committed);
//  2. the check: nb.Try runs the reader's function and compares its result with mhalib's. It
//     prints "✓ …", "✗ …" (the expected and the received shape, or the first element that
//     differs) or, while the stub is still there, "… not solved yet — <hint>". It never stops
//     the notebook;
//  3. the folded solution (source hidden): the same function written out, checked with
//     nb.Solved, which stops the notebook when it does not match — so CI proves the solution
//     right, and scripts/notebooks.py proves the stub is caught (it fails a run where an
//     exercise's check cell does not print "not solved yet").

// WriteMe is what an exercise's stub panics with: "write me".
var WriteMe = errors.New("write me: replace the panic(nb.WriteMe) line with your code")

// Diff compares got with want, element by element within tol (absolute plus relative: |got −
// want| ≤ tol + tol·|want|), and says how they differ in the words of the lessons' grader
// (mhatest.Diff, which both use): "got nothing (nil), expected shape [2 3]", "expected shape
// [2 3], got [3 2]", or "the values differ" with the first differing index, both values and how
// many differ. It returns "" when they match. NaN matches nothing; equal infinities match.
func Diff(got, want *tensors.Tensor, tol float64) string {
	if got == nil {
		return mhatest.Diff(nil, ToRef(want), tol)
	}
	return mhatest.Diff(ToRef(got), ToRef(want), tol)
}

// attempt runs yours, turning a panic into an error (GoMLX returns the graph-building panics of
// the reader's function as errors of Exec, which yours passes on by panicking through Must).
func attempt(yours func() *tensors.Tensor) (got *tensors.Tensor, err error) {
	defer func() {
		if r := recover(); r != nil {
			if e, ok := r.(error); ok {
				err = e
			} else {
				err = fmt.Errorf("%v", r)
			}
		}
	}()
	return yours(), nil
}

// notWritten reports whether err is (or wraps, or quotes) WriteMe: the stub is still there.
func notWritten(err error) bool {
	return errors.Is(err, WriteMe) || strings.Contains(err.Error(), WriteMe.Error())
}

// Try checks a reader's answer to an exercise: it runs yours and compares its result with want
// (Diff, within tol). It prints "✓ what: …" when they match, "… not solved yet — hint" while
// yours still panics with WriteMe, and otherwise "✗ what: " and what differs (or the error). It
// never stops the notebook, and returns whether the answer matched.
func Try(what, hint string, yours func() *tensors.Tensor, want *tensors.Tensor, tol float64) bool {
	msg, ok := try(what, yours, want, tol)
	switch {
	case ok:
		fmt.Println("✓ " + msg)
	case msg == "":
		fmt.Println("… not solved yet — " + hint)
	default:
		fmt.Println("✗ " + msg)
	}
	return ok
}

// Solved is Try for an exercise's folded solution: it prints "✓ …" when yours matches want and
// otherwise panics with what differs (which stops the notebook: the solution is wrong).
func Solved(what string, yours func() *tensors.Tensor, want *tensors.Tensor, tol float64) {
	msg, ok := try(what, yours, want, tol)
	if msg == "" {
		msg = what + ": the solution still panics with nb.WriteMe"
	}
	Check(ok, "%s", msg)
}

// try returns the message and whether yours matched; the message is "" while yours is a stub.
func try(what string, yours func() *tensors.Tensor, want *tensors.Tensor, tol float64) (string, bool) {
	got, err := attempt(yours)
	switch {
	case err != nil && notWritten(err):
		return "", false
	case err != nil:
		return fmt.Sprintf("%s: your code stopped with an error: %v", what, err), false
	}
	if d := Diff(got, want, tol); d != "" {
		return what + ": " + d, false
	}
	return fmt.Sprintf("%s: matches, shape %v (tolerance %g)", what, want.Shape().Dimensions, tol), true
}

// FromRows returns the Float32 tensor [len(m), len(m[0])] holding the rows of m.
func FromRows(m [][]float64) *tensors.Tensor {
	if len(m) == 0 {
		return tensors.FromFlatDataAndDimensions([]float32{}, 0, 0)
	}
	data := make([]float32, 0, len(m)*len(m[0]))
	for i, row := range m {
		if len(row) != len(m[0]) {
			panic(fmt.Errorf("nb.FromRows: row %d has %d elements, row 0 has %d", i, len(row), len(m[0])))
		}
		for _, v := range row {
			data = append(data, float32(v))
		}
	}
	return tensors.FromFlatDataAndDimensions(data, len(m), len(m[0]))
}

// RowSums returns the sum of each row of m.
func RowSums(m [][]float64) []float64 {
	sums := make([]float64, len(m))
	for i, row := range m {
		for _, v := range row {
			sums[i] += v
		}
	}
	return sums
}
