package smollm2

import (
	"strings"

	"github.com/gomlx/gomlx/pkg/core/tensors"
)

// splitName splits a Hugging Face parameter name "a.b.c.weight" into the scope "/a/b/c" and
// the variable name "weight".
func splitName(name string) (scope, leaf string) {
	i := strings.LastIndexByte(name, '.')
	return "/" + replaceDots(name[:i]), name[i+1:]
}

func replaceDots(s string) string { return strings.ReplaceAll(s, ".", "/") }

// tensorOf makes a GoMLX tensor of t.
func tensorOf(t *Tensor) *tensors.Tensor {
	return tensors.FromFlatDataAndDimensions(t.Data, t.Shape...)
}
