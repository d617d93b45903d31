package gguf

import (
	"fmt"
	"math"
)

// Value is one metadata value. Any returns it as a Go value: uint8, int8, uint16, int16,
// uint32, int32, float32, bool, string, uint64, int64 or float64 for a scalar; for an array
// (Type TypeArray, element type Elem) a typed slice ([]uint8 … []float64, []bool, []string),
// or []Value for an array of arrays.
type Value struct {
	Type ValueType
	Elem ValueType // element type when Type is TypeArray
	v    any
}

// Any returns the value (see Value).
func (v Value) Any() any { return v.v }

// Len is the number of elements of an array, 0 for a scalar.
func (v Value) Len() int {
	switch s := v.v.(type) {
	case []uint8:
		return len(s)
	case []int8:
		return len(s)
	case []uint16:
		return len(s)
	case []int16:
		return len(s)
	case []uint32:
		return len(s)
	case []int32:
		return len(s)
	case []float32:
		return len(s)
	case []bool:
		return len(s)
	case []string:
		return len(s)
	case []uint64:
		return len(s)
	case []int64:
		return len(s)
	case []float64:
		return len(s)
	case []Value:
		return len(s)
	}
	return 0
}

// Int returns an integer scalar of any width and signedness as an int64; ok is false for
// other types and for a uint64 above math.MaxInt64.
func (v Value) Int() (n int64, ok bool) {
	switch x := v.v.(type) {
	case uint8:
		return int64(x), true
	case int8:
		return int64(x), true
	case uint16:
		return int64(x), true
	case int16:
		return int64(x), true
	case uint32:
		return int64(x), true
	case int32:
		return int64(x), true
	case int64:
		return x, true
	case uint64:
		if x > math.MaxInt64 {
			return 0, false
		}
		return int64(x), true
	}
	return 0, false
}

// Float returns a float32 or float64 scalar as a float64.
func (v Value) Float() (f float64, ok bool) {
	switch x := v.v.(type) {
	case float32:
		return float64(x), true
	case float64:
		return x, true
	}
	return 0, false
}

// String formats the value; long arrays are abbreviated to their type and length.
func (v Value) String() string {
	switch x := v.v.(type) {
	case string:
		return fmt.Sprintf("%q", x)
	case []Value:
		return fmt.Sprintf("[%d arrays]", len(x))
	}
	if v.Type == TypeArray {
		if n := v.Len(); n > 8 {
			return fmt.Sprintf("[%d × %s]", n, v.Elem)
		}
	}
	return fmt.Sprint(v.v)
}
