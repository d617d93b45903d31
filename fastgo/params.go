package fastgo

import (
	"fmt"
	"reflect"
	"sync"

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
	data := reflect.ValueOf(node).Elem().FieldByIndex(nodeDataIndex())
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
	fields := dotFieldIndices(v.Type())
	ints := func(k int) ([]int, error) {
		if fields[k] < 0 {
			return nil, fmt.Errorf("fastgo: dotGeneralNodeData.%s is not an []int", dotFieldNames[k])
		}
		out, _ := intsField(v.Field(fields[k])) // the node's own slice: read only
		return out, nil
	}
	one := func(k int) (int, error) {
		if fields[k] < 0 {
			return 0, fmt.Errorf("fastgo: dotGeneralNodeData.%s is not an int", dotFieldNames[k])
		}
		return int(v.Field(fields[k]).Int()), nil
	}
	for k, dst := range []*[]int{&p.lhsContractingAxes, &p.lhsBatchAxes, &p.rhsContractingAxes, &p.rhsBatchAxes} {
		if *dst, err = ints(k); err != nil {
			return p, err
		}
	}
	for k, dst := range []*int{&p.batch, &p.lhsCross, &p.rhsCross, &p.contract} {
		if *dst, err = one(4 + k); err != nil {
			return p, err
		}
	}
	return p, nil
}

// dotFieldNames are the fields readDotParams reads: four []int, then four int.
var dotFieldNames = [8]string{"lhsContractingAxes", "lhsBatchAxes", "rhsContractingAxes", "rhsBatchAxes",
	"batchSize", "lhsCrossSize", "rhsCrossSize", "contractingSize"}

// dotFieldIndices returns the index of each of dotFieldNames in t (simplego's
// dotGeneralNodeData), or −1 where it is missing or of another kind: looked up once per type
// (FieldByName scans the fields by name, and every DotGeneral of every run reads them).
func dotFieldIndices(t reflect.Type) [8]int {
	if idx, ok := dotFields.Load(t); ok {
		return idx.([8]int)
	}
	var idx [8]int
	for k, name := range dotFieldNames {
		idx[k] = -1
		f, ok := t.FieldByName(name)
		switch {
		case !ok || len(f.Index) != 1:
		case k < 4 && f.Type.Kind() == reflect.Slice && f.Type.Elem().Kind() == reflect.Int,
			k >= 4 && f.Type.Kind() == reflect.Int:
			idx[k] = f.Index[0]
		}
	}
	dotFields.Store(t, idx)
	return idx
}

var dotFields sync.Map // reflect.Type → [8]int

// nodeDataIndex is the index of simplego.Node's field "data" (nil if it has none).
var nodeDataIndex = sync.OnceValue(func() []int {
	if f, ok := reflect.TypeFor[simplego.Node]().FieldByName("data"); ok {
		return f.Index
	}
	return nil
})

// backendParallelism reads simplego's worker limit (backend.workers.maxParallelism; set by
// GOMLX_BACKEND="go:parallelism=N"): 0 means sequential, < 0 unlimited. It returns the number of
// goroutines one GEMM may use.
func backendParallelism(b *simplego.Backend) int {
	if idx := maxParallelismIndex(); idx != nil {
		switch n := int(reflect.ValueOf(b).Elem().FieldByIndex(idx).Int()); {
		case n == 0:
			return 1
		case n > 0:
			return n
		}
	}
	return defaultWorkers()
}

// maxParallelismIndex is the field path of backend.workers.maxParallelism (an int), nil if
// simplego.Backend has none: looked up once (every fastgo executor reads it on every run).
var maxParallelismIndex = sync.OnceValue(func() []int {
	w, ok := reflect.TypeFor[simplego.Backend]().FieldByName("workers")
	if !ok || w.Type.Kind() != reflect.Struct {
		return nil
	}
	m, ok := w.Type.FieldByName("maxParallelism")
	if !ok || m.Type.Kind() != reflect.Int {
		return nil
	}
	return append(append([]int(nil), w.Index...), m.Index...)
})

// offsets builds the three offset tables of one operand of shape dims (row-major): element
// (batch, cross, contract) is at batchOff[batch] + crossOff[cross] + contractOff[contract].
// Batch and contracting indices run over their axes in the order the DotGeneral lists them
// (last fastest), cross indices over the remaining axes in increasing order — simplego's
// normalisation, so the output [batch, lhsCross, rhsCross] matches GoMLX's reshape after it.
func offsets(dims, contractingAxes, batchAxes []int) (batchOff, crossOff, contractOff []int) {
	k, keyed := offsetsKeyOf(dims, contractingAxes, batchAxes)
	if keyed {
		offsetsMemo.Lock()
		t, ok := offsetsMemo.m[k]
		offsetsMemo.Unlock()
		if ok {
			return t[0], t[1], t[2]
		}
	}
	batchOff, crossOff, contractOff = buildOffsets(dims, contractingAxes, batchAxes)
	if keyed && len(batchOff)+len(crossOff)+len(contractOff) <= offsetsMemoMax {
		offsetsMemo.Lock()
		if len(offsetsMemo.m) >= offsetsMemoEntries {
			clear(offsetsMemo.m)
		}
		offsetsMemo.m[k] = [3][]int{batchOff, crossOff, contractOff}
		offsetsMemo.Unlock()
	}
	return batchOff, crossOff, contractOff
}

// The offset tables of small operands are kept (read only: nothing writes an operand's tables
// after offsets), keyed by shape and axes. A SmolLM2 decoding step runs 60 attention products
// on the same four small shapes; building their tables each time was ~0.1 ms of a ~8 ms step
// (BenchmarkDecodeStep's profile, offsets.func1).
const (
	offsetsMemoMax     = 1 << 14 // table entries of an operand kept, at most
	offsetsMemoEntries = 512     // operands kept; more: start again
	offsetsMemoRank    = 8
)

type offsetsKey struct {
	dims                  [offsetsMemoRank]int
	contracting, batch    [offsetsMemoRank]int8
	rank, nContract, nBat int8
}

var offsetsMemo = struct {
	sync.Mutex
	m map[offsetsKey][3][]int
}{m: map[offsetsKey][3][]int{}}

// offsetsKeyOf is the memo's key of an operand, false when it has too many axes.
func offsetsKeyOf(dims, contractingAxes, batchAxes []int) (k offsetsKey, ok bool) {
	if len(dims) > offsetsMemoRank || len(contractingAxes) > offsetsMemoRank || len(batchAxes) > offsetsMemoRank {
		return k, false
	}
	copy(k.dims[:], dims)
	for i, a := range contractingAxes {
		k.contracting[i] = int8(a)
	}
	for i, a := range batchAxes {
		k.batch[i] = int8(a)
	}
	k.rank, k.nContract, k.nBat = int8(len(dims)), int8(len(contractingAxes)), int8(len(batchAxes))
	return k, true
}

// buildOffsets is offsets without the memo.
func buildOffsets(dims, contractingAxes, batchAxes []int) (batchOff, crossOff, contractOff []int) {
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
