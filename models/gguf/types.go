package gguf

import "fmt"

// ValueType is the type tag of a metadata value.
type ValueType uint32

// Metadata value types (GGUF specification, gguf_metadata_value_type).
const (
	TypeUint8   ValueType = 0
	TypeInt8    ValueType = 1
	TypeUint16  ValueType = 2
	TypeInt16   ValueType = 3
	TypeUint32  ValueType = 4
	TypeInt32   ValueType = 5
	TypeFloat32 ValueType = 6
	TypeBool    ValueType = 7
	TypeString  ValueType = 8
	TypeArray   ValueType = 9
	TypeUint64  ValueType = 10
	TypeInt64   ValueType = 11
	TypeFloat64 ValueType = 12
)

var valueTypeNames = [...]string{"uint8", "int8", "uint16", "int16", "uint32", "int32", "float32",
	"bool", "string", "array", "uint64", "int64", "float64"}

func (t ValueType) String() string {
	if int(t) < len(valueTypeNames) {
		return valueTypeNames[t]
	}
	return fmt.Sprintf("value type %d", uint32(t))
}

// size is the encoded size in bytes of a scalar of type t; 0 for strings, arrays and unknown
// types.
func (t ValueType) size() int {
	switch t {
	case TypeUint8, TypeInt8, TypeBool:
		return 1
	case TypeUint16, TypeInt16:
		return 2
	case TypeUint32, TypeInt32, TypeFloat32:
		return 4
	case TypeUint64, TypeInt64, TypeFloat64:
		return 8
	}
	return 0
}

// minSize is the fewest bytes one encoded value of type t takes: the scalar size, 8 for a
// string (its length), 12 for an array (element type and count).
func (t ValueType) minSize() int {
	switch t {
	case TypeString:
		return 8
	case TypeArray:
		return 12
	}
	return t.size()
}

// TensorType is ggml's tensor element type (ggml_type).
type TensorType uint32

// The tensor types this package dequantises; the others are listed in tensorTypes.
const (
	TensorF32  TensorType = 0
	TensorF16  TensorType = 1
	TensorQ4_0 TensorType = 2
	TensorQ4_1 TensorType = 3
	TensorQ8_0 TensorType = 8
	TensorBF16 TensorType = 30
)

// typeInfo: a type's name, elements per block and bytes per block.
type typeInfo struct {
	name       string
	blockSize  uint64
	blockBytes uint64
}

// tensorTypes lists ggml's types with their block layout (ggml.c's type_traits; the same
// table as the gguf Python package's GGML_QUANT_SIZES 0.19.0). Ids 4, 5, 31–33 and 36–38 were
// removed from ggml and are invalid.
var tensorTypes = map[TensorType]typeInfo{
	0: {"F32", 1, 4}, 1: {"F16", 1, 2}, 2: {"Q4_0", 32, 18}, 3: {"Q4_1", 32, 20},
	6: {"Q5_0", 32, 22}, 7: {"Q5_1", 32, 24}, 8: {"Q8_0", 32, 34}, 9: {"Q8_1", 32, 40},
	10: {"Q2_K", 256, 84}, 11: {"Q3_K", 256, 110}, 12: {"Q4_K", 256, 144}, 13: {"Q5_K", 256, 176},
	14: {"Q6_K", 256, 210}, 15: {"Q8_K", 256, 292}, 16: {"IQ2_XXS", 256, 66}, 17: {"IQ2_XS", 256, 74},
	18: {"IQ3_XXS", 256, 98}, 19: {"IQ1_S", 256, 50}, 20: {"IQ4_NL", 32, 18}, 21: {"IQ3_S", 256, 110},
	22: {"IQ2_S", 256, 82}, 23: {"IQ4_XS", 256, 136}, 24: {"I8", 1, 1}, 25: {"I16", 1, 2},
	26: {"I32", 1, 4}, 27: {"I64", 1, 8}, 28: {"F64", 1, 8}, 29: {"IQ1_M", 256, 56},
	30: {"BF16", 1, 2}, 34: {"TQ1_0", 256, 54}, 35: {"TQ2_0", 256, 66}, 39: {"MXFP4", 32, 17},
	40: {"NVFP4", 64, 36}, 41: {"Q1_0", 128, 18},
}

func (t TensorType) String() string {
	if ti, ok := tensorTypes[t]; ok {
		return ti.name
	}
	return fmt.Sprintf("ggml type %d", uint32(t))
}

// BlockSize is the number of elements per quantisation block (1 for plain types), 0 for an
// unknown type.
func (t TensorType) BlockSize() int { return int(tensorTypes[t].blockSize) }

// BlockBytes is the number of bytes per block, 0 for an unknown type.
func (t TensorType) BlockBytes() int { return int(tensorTypes[t].blockBytes) }

// Dequantisable reports whether TensorFloat32 reads this type.
func (t TensorType) Dequantisable() bool {
	switch t {
	case TensorF32, TensorF16, TensorQ8_0, TensorQ4_1:
		return true
	}
	return false
}
