package fastgo

import (
	"fmt"
	"reflect"

	"github.com/gomlx/gomlx/backends/simplego"
)

// dotParams is what simplego v0.26's DotGeneral builder stores in its node (the unexported
// dotGeneralNodeData), read through reflection: the axes of each operand and the sizes of the
// normalised problem out[batch, lhsCross, rhsCross] = Σ_contract lhs · rhs.
type dotParams struct {
	lhsContractingAxes, lhsBatchAxes    []int
	rhsContractingAxes, rhsBatchAxes    []int
	batch, lhsCross, rhsCross, contract int
}

// readDotParams reads the node's DotGeneral parameters. Reflection reads unexported fields
// (it cannot write them); a field that is missing or of another kind — a GoMLX other than
// v0.26.0 — is an error, and the caller falls back to GoMLX's own executor.
func readDotParams(node *simplego.Node) (p dotParams, err error) {
	data := reflect.ValueOf(node).Elem().FieldByName("data")
	if !data.IsValid() || data.Kind() != reflect.Interface || data.IsNil() {
		return p, fmt.Errorf("fastgo: simplego.Node has no DotGeneral data (GoMLX other than v0.26.0?)")
	}
	v := data.Elem()
	if v.Kind() == reflect.Pointer {
		v = v.Elem()
	}
	if v.Kind() != reflect.Struct || v.Type().Name() != "dotGeneralNodeData" {
		return p, fmt.Errorf("fastgo: DotGeneral node data is %s, want simplego.dotGeneralNodeData", v.Type())
	}
	ints := func(name string) ([]int, error) {
		f := v.FieldByName(name)
		if !f.IsValid() || f.Kind() != reflect.Slice || f.Type().Elem().Kind() != reflect.Int {
			return nil, fmt.Errorf("fastgo: dotGeneralNodeData.%s is not an []int", name)
		}
		out := make([]int, f.Len())
		for i := range out {
			out[i] = int(f.Index(i).Int())
		}
		return out, nil
	}
	one := func(name string) (int, error) {
		f := v.FieldByName(name)
		if !f.IsValid() || f.Kind() != reflect.Int {
			return 0, fmt.Errorf("fastgo: dotGeneralNodeData.%s is not an int", name)
		}
		return int(f.Int()), nil
	}
	for _, s := range []struct {
		dst  *[]int
		name string
	}{{&p.lhsContractingAxes, "lhsContractingAxes"}, {&p.lhsBatchAxes, "lhsBatchAxes"},
		{&p.rhsContractingAxes, "rhsContractingAxes"}, {&p.rhsBatchAxes, "rhsBatchAxes"}} {
		if *s.dst, err = ints(s.name); err != nil {
			return p, err
		}
	}
	for _, s := range []struct {
		dst  *int
		name string
	}{{&p.batch, "batchSize"}, {&p.lhsCross, "lhsCrossSize"}, {&p.rhsCross, "rhsCrossSize"}, {&p.contract, "contractingSize"}} {
		if *s.dst, err = one(s.name); err != nil {
			return p, err
		}
	}
	return p, nil
}

// backendParallelism reads simplego's worker limit (backend.workers.maxParallelism; set by
// GOMLX_BACKEND="go:parallelism=N"): 0 means sequential, < 0 unlimited. It returns the number of
// goroutines one GEMM may use.
func backendParallelism(b *simplego.Backend) int {
	f := reflect.ValueOf(b).Elem().FieldByName("workers")
	if f.IsValid() && f.Kind() == reflect.Struct {
		if m := f.FieldByName("maxParallelism"); m.IsValid() && m.Kind() == reflect.Int {
			switch n := int(m.Int()); {
			case n == 0:
				return 1
			case n > 0:
				return n
			}
		}
	}
	return defaultWorkers()
}

// offsets builds the three offset tables of one operand of shape dims (row-major): element
// (batch, cross, contract) is at batchOff[batch] + crossOff[cross] + contractOff[contract].
// Batch and contracting indices run over their axes in the order the DotGeneral lists them
// (last fastest), cross indices over the remaining axes in increasing order — simplego's
// normalisation, so the output [batch, lhsCross, rhsCross] matches GoMLX's reshape after it.
func offsets(dims, contractingAxes, batchAxes []int) (batchOff, crossOff, contractOff []int) {
	rank := len(dims)
	strides := make([]int, rank)
	s := 1
	for a := rank - 1; a >= 0; a-- {
		strides[a] = s
		s *= dims[a]
	}
	kind := make([]byte, rank) // 0 cross, 1 contracting, 2 batch
	for _, a := range contractingAxes {
		kind[a] = 1
	}
	for _, a := range batchAxes {
		kind[a] = 2
	}
	var cross []int
	for a := range rank {
		if kind[a] == 0 {
			cross = append(cross, a)
		}
	}
	table := func(axes []int) []int {
		n := 1
		for _, a := range axes {
			n *= dims[a]
		}
		out := make([]int, n)
		idx := make([]int, len(axes))
		off := 0
		for i := range n {
			out[i] = off
			// Advance the mixed-radix counter, last axis fastest.
			for j := len(axes) - 1; j >= 0; j-- {
				a := axes[j]
				idx[j]++
				off += strides[a]
				if idx[j] < dims[a] {
					break
				}
				off -= idx[j] * strides[a]
				idx[j] = 0
			}
		}
		return out
	}
	return table(batchAxes), table(cross), table(contractingAxes)
}
