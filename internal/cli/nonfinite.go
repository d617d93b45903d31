package cli

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/gomlx/gomlx/pkg/core/dtypes"
	"github.com/gomlx/gomlx/pkg/core/tensors"
	"github.com/mhalab/mhalab/mhalib/inspect"
)

// WarnNonFinite writes one line to w for each float output holding NaN or ±Inf — how many of
// how many, where the first is, and which of the inputs (read from the file of inputFlag) hold
// any — headed by prefix ("mhalab sdpa: "). Such outputs are results, not errors: NaN in gives
// NaN out, as in PyTorch, and so does a row whose every key is masked in nn.MultiheadAttention;
// the command writes them and exits 0, and this says so instead of staying silent.
func WarnNonFinite(w io.Writer, prefix string, outputs map[string]*tensors.Tensor, inputFlag string, inputs map[string]*tensors.Tensor) {
	var cause []string
	for _, name := range sortedKeys(inputs) {
		if n, _, err := nonFinite(inputs[name]); err == nil && n > 0 {
			cause = append(cause, fmt.Sprintf("%s %s has %d of %d", inputFlag, name, n, inputs[name].Shape().Size()))
		}
	}
	why := "every input is finite (a row with every key masked gives NaN, as in PyTorch)"
	if len(cause) > 0 {
		why = strings.Join(cause, ", ")
	}
	for _, name := range sortedKeys(outputs) {
		n, first, err := nonFinite(outputs[name])
		if err != nil || n == 0 {
			continue
		}
		fmt.Fprintf(w, "%swarning: %s has %d non-finite values (NaN or ±Inf) of %d, the first at %v; %s\n",
			prefix, name, n, outputs[name].Shape().Size(), first, why)
	}
}

// nonFinite is inspect.NonFinite for float tensors; other dtypes have none.
func nonFinite(t *tensors.Tensor) (int, []int, error) {
	if t == nil || (t.DType() != dtypes.Float32 && t.DType() != dtypes.Float64) {
		return 0, nil, nil
	}
	return inspect.NonFinite(t)
}

func sortedKeys(m map[string]*tensors.Tensor) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
