package fastgo

import (
	"fmt"
	"reflect"
	"unsafe"

	"github.com/gomlx/gomlx/backends/simplego"
	"github.com/gomlx/gomlx/pkg/core/shapes"
)

// simplego v0.26's Node keeps its output shape and its op parameters (a permutation, the
// reduced axes, the broadcast axes …) in unexported fields: `shape shapes.Shape` and `data any`.
// The element-wise executors read them through field offsets found with reflection when the
// package initialises; the field types are checked then, and if either field is missing or of
// another type (a GoMLX other than v0.26.0) nodeFieldsErr says so and those executors are not
// installed (DotGeneral, which reads its parameters with reflection, is unaffected).
// (A package-level variable, so that it is set before any init function registers executors.)
var (
	nodeShapeOffset, nodeDataOffset uintptr
	nodeFieldsErr                   = findNodeFields()
)

func findNodeFields() error {
	t := reflect.TypeOf(simplego.Node{})
	shape, ok1 := t.FieldByName("shape")
	data, ok2 := t.FieldByName("data")
	switch {
	case !ok1 || shape.Type != reflect.TypeOf(shapes.Shape{}):
		return fmt.Errorf("fastgo: simplego.Node has no field `shape shapes.Shape` (GoMLX other than v0.26.0?)")
	case !ok2 || data.Type.Kind() != reflect.Interface || data.Type.NumMethod() != 0:
		return fmt.Errorf("fastgo: simplego.Node has no field `data any` (GoMLX other than v0.26.0?)")
	}
	nodeShapeOffset, nodeDataOffset = shape.Offset, data.Offset
	return nil
}

// nodeShape is the node's output shape (simplego computed it when the graph was built).
func nodeShape(n *simplego.Node) shapes.Shape {
	return *(*shapes.Shape)(unsafe.Add(unsafe.Pointer(n), nodeShapeOffset))
}

// nodeInts is the node's parameter when it is an []int (Transpose: the permutation; Reduce*:
// the reduced axes; BroadcastInDim: the output axis of each operand axis), and false otherwise.
func nodeInts(n *simplego.Node) ([]int, bool) {
	v, ok := (*(*any)(unsafe.Add(unsafe.Pointer(n), nodeDataOffset))).([]int)
	return v, ok
}

// nodeData is the node's parameter, whatever its type (Gather: simplego's *gatherNode).
func nodeData(n *simplego.Node) any {
	return *(*any)(unsafe.Add(unsafe.Pointer(n), nodeDataOffset))
}

// nodeStruct is a node's parameter that is a pointer to one of simplego's unexported structs
// (Gather's *gatherNode, Scatter's *scatterNode), read field by field with reflection.
type nodeStruct struct{ v reflect.Value }

// nodeStructOf returns the node's parameter if it is a non-nil pointer to the struct typeName.
func nodeStructOf(n *simplego.Node, typeName string) (nodeStruct, bool) {
	data := nodeData(n)
	if data == nil {
		return nodeStruct{}, false
	}
	v := reflect.ValueOf(data)
	if v.Kind() != reflect.Pointer || v.IsNil() || v.Elem().Kind() != reflect.Struct || v.Elem().Type().Name() != typeName {
		return nodeStruct{}, false
	}
	return nodeStruct{v.Elem()}, true
}

// ints is the []int field name (false: missing or of another type).
func (s nodeStruct) ints(name string) ([]int, bool) {
	return intsField(s.v.FieldByName(name))
}

// intsField is the value of f, a field of kind []int (false: missing or of another kind): the
// field's own slice when its type is []int, as nodeInts returns the node's — the node's
// parameters, which callers only read — else a copy. Reading it element by element through
// reflection allocated and took ~1 µs a DotGeneral or scatter; a decoding step runs ~300.
func intsField(f reflect.Value) ([]int, bool) {
	if !f.IsValid() || f.Kind() != reflect.Slice || f.Type().Elem().Kind() != reflect.Int {
		return nil, false
	}
	if f.Type() == reflect.TypeFor[[]int]() && f.CanAddr() {
		return *(*[]int)(unsafe.Pointer(f.UnsafeAddr())), true
	}
	out := make([]int, f.Len())
	for i := range out {
		out[i] = int(f.Index(i).Int())
	}
	return out, true
}

// int is the int field name (false: missing or of another type).
func (s nodeStruct) int(name string) (int, bool) {
	f := s.v.FieldByName(name)
	if !f.IsValid() || f.Kind() != reflect.Int {
		return 0, false
	}
	return int(f.Int()), true
}
