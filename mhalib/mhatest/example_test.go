package mhatest_test

import (
	"fmt"
	"math"

	"github.com/mhalab/mhalab/mhalib/mhatest"
)

// One head, one query, two keys: logits [ln 3, 0] → weights [¾, ¼].
func ExampleSDPA() {
	q := mhatest.FromFloat64([]float64{math.Log(3), 0}, 1, 1, 1, 2) // [B=1, h=1, Lq=1, dk=2]
	k := mhatest.FromFloat64([]float64{1, 0, 0, 1}, 1, 1, 2, 2)     // [B, h, Lk=2, dk]
	v := mhatest.FromFloat64([]float64{1, 2, 3, 4}, 1, 1, 2, 2)     // [B, h, Lk, dv=2]
	out, weights := mhatest.SDPA(q, k, v, nil, 1)
	fmt.Printf("weights %.2f\nout %.2f\n", weights.Data, out.Data)
	// Output:
	// weights [0.75 0.25]
	// out [1.50 2.50]
}

func ExampleCausalBottomRight() {
	for _, row := range mhatest.CausalBottomRight(2, 4) { // [Lq=2][Lk=4]
		fmt.Println(row)
	}
	// Output:
	// [true true true false]
	// [true true true true]
}

// A fully masked query row gives zero weights, not NaN.
func ExampleMaskSpec_Bias() {
	spec := mhatest.MaskSpec{
		KeyPaddingMask: mhatest.NewBoolMask(mhatest.BlockedWhereTrue, []bool{true, true}, 1, 2), // [B=1, Lk=2]
	}
	bias, _ := spec.Bias(1, 1, 1, 2) // [B, h, Lq, Lk]
	q, kv := mhatest.New(1, 1, 1, 2), mhatest.New(1, 1, 2, 2)
	_, weights := mhatest.SDPA(q, kv, kv, bias, 0)
	fmt.Println(bias.Data, weights.Data)
	// Output:
	// [-Inf -Inf] [0 0]
}

// Diff says how a result differs from the reference, as the lessons' grader and the notebooks'
// exercises report it.
func ExampleDiff() {
	want := mhatest.FromFloat64([]float64{1, 2, 3, 4, 5, 6}, 2, 3)
	fmt.Printf("%q\n", mhatest.Diff(mhatest.FromFloat64([]float64{1, 2, 3, 4, 5, 6}, 2, 3), want, 1e-6))
	fmt.Println(mhatest.Diff(mhatest.FromFloat64([]float64{1, 2, 3, 4, 5, 6}, 3, 2), want, 1e-6))
	fmt.Println(mhatest.Diff(mhatest.FromFloat64([]float64{1, 2, 3, 4, 7, 9}, 2, 3), want, 1e-6))
	// Output:
	// ""
	// expected shape [2 3], got [3 2]
	// the values differ
	//   first difference at index [1 1]: expected 5, got 7 (|difference| 2 > tolerance 1e-06)
	//   2 of 6 elements differ
}
