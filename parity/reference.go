package parity

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/gomlx/gomlx/pkg/core/dtypes"
	"github.com/gomlx/gomlx/pkg/core/tensors"

	"github.com/mhalab/mhalab/torchio"
)

// Config is a case as parity/cases.py writes it (the file's "config" metadata).
type Config struct {
	Kind string `json:"kind"` // mha, sdpa, seed000, seed001, seed003, seed003blk
	Name string `json:"name"`
	Seed int    `json:"seed"`
	B    int    `json:"B"`
	Lq   int    `json:"Lq"`
	Lk   int    `json:"Lk"`
	H    int    `json:"H"`

	// nn.MultiheadAttention (kind mha).
	E                  int     `json:"E"`
	KDim               int     `json:"kdim"`
	VDim               int     `json:"vdim"`
	Bias               bool    `json:"bias"`
	AddBiasKV          bool    `json:"add_bias_kv"`
	AddZeroAttn        bool    `json:"add_zero_attn"`
	BatchFirst         bool    `json:"batch_first"`
	AttnMask           string  `json:"attn_mask"`        // "", bool2d, bool3d, float2d, float3d, causal_bool; SDPA: bool2d, bool4d, bool_b1, float4d, float_b1
	KeyPaddingMask     string  `json:"key_padding_mask"` // "", bool, float
	IsCausal           bool    `json:"is_causal"`
	NeedWeights        bool    `json:"need_weights"`
	AverageAttnWeights bool    `json:"average_attn_weights"`
	InputScale         float64 `json:"input_scale"`
	MaskAsUint8        bool    `json:"mask_as_uint8"` // the `mhalab forward` inputs file stores bool masks as uint8

	// F.scaled_dot_product_attention (kind sdpa).
	Dk    int      `json:"dk"`
	Dv    int      `json:"dv"`
	Scale *float64 `json:"scale"`

	// Seed modules.
	D         int    `json:"d"`
	HeadDim   int    `json:"head_dim"`
	HeadSizes []int  `json:"head_sizes"`
	Mask      string `json:"mask"` // "", pad, subsequent (1 = attend)

	Live bool `json:"live"` // too large for the committed fixtures

	// Pool is [first seed, size] for a soak configuration whose structure is drawn from a pool
	// (parity/cases.py pooled_case); nil otherwise.
	Pool []int `json:"pool"`
}

// StructureKey identifies the graph a reference needs: its configuration without the name,
// seed, input scale and the inputs file's mask dtype, and the name, dtype and shape of every
// parameter and input. References with the same key differ only in their values.
func (r *Reference) StructureKey() string {
	c := r.Config
	c.Name, c.Seed, c.InputScale, c.MaskAsUint8, c.Pool = "", 0, 0, false, nil
	key, err := json.Marshal(c)
	if err != nil {
		panic(err) // a struct of plain fields always marshals
	}
	var names []string
	for n := range r.Tensors {
		if strings.HasPrefix(n, "param.") || strings.HasPrefix(n, "input.") {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	var b strings.Builder
	b.Write(key)
	for _, n := range names {
		fmt.Fprintf(&b, "|%s %s", n, r.Tensors[n].Shape())
	}
	return b.String()
}

// Group is the case's family for reports: "mha", "sdpa", "seed000", ..., or "random" for the
// random configurations.
func (c Config) Group() string {
	if strings.HasPrefix(c.Name, "random_") {
		return "random-" + c.Kind
	}
	return c.Kind
}

// Reference is one file written by parity/gen.py.
type Reference struct {
	Path         string
	Config       Config
	TorchVersion string
	// Tensors by name: param.*, input.*, torch.* (live files only), ref64.*.
	Tensors map[string]*tensors.Tensor
	// TorchErr is PyTorch float32's own max |torch − ref64| per result name (e.g. "attn_output").
	TorchErr map[string]float64
	// TorchErrNoFMA is the same for PyTorch's float32 code run with every matrix product's
	// products rounded before the sum (no fused multiply-add; gen.py's NoFMA), nil in files
	// written before it existed.
	TorchErrNoFMA map[string]float64
}

// Load reads a reference file.
func Load(path string) (*Reference, error) {
	f, err := torchio.ReadFile(path)
	if err != nil {
		return nil, err
	}
	r := &Reference{Path: path, Tensors: f.Tensors, TorchVersion: f.Metadata["torch_version"]}
	if err := json.Unmarshal([]byte(f.Metadata["config"]), &r.Config); err != nil {
		return nil, fmt.Errorf("parity: %s: metadata config: %w", path, err)
	}
	if err := json.Unmarshal([]byte(f.Metadata["torch_err"]), &r.TorchErr); err != nil {
		return nil, fmt.Errorf("parity: %s: metadata torch_err: %w", path, err)
	}
	if m := f.Metadata["torch_err_nofma"]; m != "" {
		if err := json.Unmarshal([]byte(m), &r.TorchErrNoFMA); err != nil {
			return nil, fmt.Errorf("parity: %s: metadata torch_err_nofma: %w", path, err)
		}
	}
	if r.Config.Kind == "" || r.Config.Name == "" {
		return nil, fmt.Errorf("parity: %s: config has no kind or name", path)
	}
	return r, nil
}

// LoadDir reads every reference file in dir (not the *.weights / *.inputs files of `mhalab
// forward`), sorted by name.
func LoadDir(dir string) ([]*Reference, error) {
	paths, err := filepath.Glob(filepath.Join(dir, "*.safetensors"))
	if err != nil {
		return nil, err
	}
	var refs []*Reference
	for _, p := range paths {
		if IsForwardFile(p) {
			continue
		}
		r, err := Load(p)
		if err != nil {
			return nil, err
		}
		refs = append(refs, r)
	}
	sort.Slice(refs, func(i, j int) bool { return refs[i].Config.Name < refs[j].Config.Name })
	return refs, nil
}

// IsForwardFile reports whether path is a weights or inputs file for `mhalab forward`.
func IsForwardFile(path string) bool {
	return strings.HasSuffix(path, ".weights.safetensors") || strings.HasSuffix(path, ".inputs.safetensors")
}

// ForwardFiles returns the paths of the `mhalab forward` files written next to a reference
// (parity/gen.py --forward-files), and whether both exist.
func (r *Reference) ForwardFiles() (weights, inputs string, ok bool) {
	base := strings.TrimSuffix(r.Path, ".safetensors")
	weights, inputs = base+".weights.safetensors", base+".inputs.safetensors"
	_, e1 := os.Stat(weights)
	_, e2 := os.Stat(inputs)
	return weights, inputs, e1 == nil && e2 == nil
}

// Params returns the param.* tensors under their names without the prefix.
func (r *Reference) Params() map[string]*tensors.Tensor {
	return r.withPrefix("param.")
}

// ResultNames lists the results the reference holds (the ref64.* names without the prefix).
func (r *Reference) ResultNames() []string {
	var names []string
	for n := range r.withPrefix("ref64.") {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

func (r *Reference) withPrefix(prefix string) map[string]*tensors.Tensor {
	m := map[string]*tensors.Tensor{}
	for k, v := range r.Tensors {
		if name, ok := strings.CutPrefix(k, prefix); ok {
			m[name] = v
		}
	}
	return m
}

// Tolerance policy (parity/README.md): every element of a result is compared with its own
// floating-point error bound, which parity/gen.py computes from the float64 reference
// (parity/errmodel.py) and stores as bound.<result>: pass when, for every element i,
//
//	|mhalib_i − ref64_i| ≤ bound_i + BoundFloor
//
// bound_i = u·E_i, u = 2⁻²⁴, where E_i is a first-order bound, in units of u, on the error of a
// float32 evaluation of the same mathematical operations in any order of summation, with or
// without fused multiply-add: each product or sum of n terms adds n·Σ|terms| of rounding, each
// operation carries its operands' bounds through its derivative (|∂|), the softmax carries the
// logits' bound as w ⊙ (E_s + Σ w E_s). BoundFloor is for underflow: a float32 result below 2⁻¹²⁶
// flushed to zero or made subnormal errs by less than 2⁻¹²⁶, carried through a few operations on
// values far below 2²⁶.
const BoundFloor = 0x1p-100

// Result is the comparison of one result tensor.
type Result struct {
	Name     string
	Err      float64 // max |got − ref64|
	TorchErr float64 // max |torch32 − ref64| (PyTorch float32's own error, for reports)
	NoFMAErr float64 // PyTorch float32 without FMA (gen.py --nofma), 0 when not measured
	// Worst is the largest |got_i − ref64_i| / (bound_i + BoundFloor), at element WorstAt (row-major
	// index; WorstIndex its multi-index), where got, ref64 and bound were WorstGot, WorstRef,
	// WorstBound.
	Worst                          float64
	WorstAt                        int
	WorstIndex                     []int
	WorstGot, WorstRef, WorstBound float64
	OK                             bool
}

// Bound is the bound (with the floor) at the worst element.
func (r Result) Bound() float64 { return r.WorstBound + BoundFloor }

// WorstErr is |got − ref64| at the worst element.
func (r Result) WorstErr() float64 { return math.Abs(r.WorstGot - r.WorstRef) }

// Ratio is Err / TorchErr: how mhalib's error compares with PyTorch float32's own (0 when both
// are 0, +Inf when only PyTorch is exact).
func (r Result) Ratio() float64 {
	if r.TorchErr == 0 {
		if r.Err == 0 {
			return 0
		}
		return math.Inf(1)
	}
	return r.Err / r.TorchErr
}

// String formats the result for test logs.
func (r Result) String() string {
	verdict := "ok"
	if !r.OK {
		verdict = "FAIL"
	}
	return fmt.Sprintf("%-32s err/bound %.3g at %v (mhalib %.9g, ref64 %.9g, err %.3g, bound %.3g)  max err %.3g, torch err %.3g, ratio %.2f  %s",
		r.Name, r.Worst, r.WorstIndex, r.WorstGot, r.WorstRef, r.WorstErr(), r.Bound(), r.Err, r.TorchErr, r.Ratio(), verdict)
}

// Bounds returns the per-element error bound of result name (bound.<name>, without the floor).
func (r *Reference) Bounds(name string) ([]float64, error) {
	b := r.Tensors["bound."+name]
	if b == nil {
		return nil, fmt.Errorf("parity: %s: no bound.%s (a file written before the error model: regenerate it with parity/gen.py)", r.Config.Name, name)
	}
	return Float64s(b)
}

// Check compares got with the reference's ref64.<name>, element by element, under the tolerance
// policy. A shape mismatch, a missing reference or a missing bound is an error.
func (r *Reference) Check(name string, got *tensors.Tensor) (Result, error) {
	ref := r.Tensors["ref64."+name]
	if ref == nil {
		return Result{}, fmt.Errorf("parity: %s: no reference ref64.%s", r.Config.Name, name)
	}
	if got == nil {
		return Result{}, fmt.Errorf("parity: %s: %s: no result", r.Config.Name, name)
	}
	dims := ref.Shape().Dimensions
	if !sameDims(dims, got.Shape().Dimensions) {
		return Result{}, fmt.Errorf("parity: %s: %s has shape %s, reference %s", r.Config.Name, name, got.Shape(), ref.Shape())
	}
	want, err := Float64s(ref)
	if err != nil {
		return Result{}, err
	}
	have, err := Float64s(got)
	if err != nil {
		return Result{}, err
	}
	bound, err := r.Bounds(name)
	if err != nil {
		return Result{}, err
	}
	if len(bound) != len(want) {
		return Result{}, fmt.Errorf("parity: %s: bound.%s has %d elements, ref64.%s %d", r.Config.Name, name, len(bound), name, len(want))
	}
	res := Result{Name: name, TorchErr: r.TorchErr[name], NoFMAErr: r.TorchErrNoFMA[name], WorstAt: -1}
	for i := range want {
		d := math.Abs(have[i] - want[i])
		if math.IsNaN(d) {
			d = math.Inf(1)
		}
		res.Err = math.Max(res.Err, d)
		q := d / (bound[i] + BoundFloor)
		if q > res.Worst || res.WorstAt < 0 {
			res.Worst, res.WorstAt = q, i
			res.WorstGot, res.WorstRef, res.WorstBound = have[i], want[i], bound[i]
		}
	}
	if res.WorstAt >= 0 {
		res.WorstIndex = unravel(res.WorstAt, dims)
	}
	res.OK = res.Worst <= 1
	return res, nil
}

// unravel turns a row-major flat index into a multi-index of dims.
func unravel(i int, dims []int) []int {
	idx := make([]int, len(dims))
	for d := len(dims) - 1; d >= 0; d-- {
		if dims[d] > 0 {
			idx[d] = i % dims[d]
			i /= dims[d]
		}
	}
	return idx
}

func sameDims(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// Float64s returns a float tensor's values as float64.
func Float64s(t *tensors.Tensor) ([]float64, error) {
	switch t.DType() {
	case dtypes.Float64:
		return tensors.CopyFlatData[float64](t)
	case dtypes.Float32:
		f, err := tensors.CopyFlatData[float32](t)
		if err != nil {
			return nil, err
		}
		out := make([]float64, len(f))
		for i, v := range f {
			out[i] = float64(v)
		}
		return out, nil
	}
	return nil, fmt.Errorf("parity: want a float32 or float64 tensor, got %s", t.Shape())
}
