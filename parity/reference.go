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

// Tolerance policy (parity/README.md): compare the error of mhalab's float32 result against the
// float64 PyTorch reference with PyTorch float32's own error against it, as FlashAttention's tests
// do, taking PyTorch's error in both kinds of float32 arithmetic the backends use: pass when
//
//	max|mhalib − ref64| ≤ ErrFactor · max(torch err, torch no-FMA err) + floor
//	torch err        = max|torch32 − ref64|        PyTorch's kernels (fused multiply-add)
//	torch no-FMA err = max|torch32 no-FMA − ref64|  PyTorch's code with every product rounded
//	floor = FloorULPs · 2⁻²³ · (largest |ref64| among the case's results of the same family)
//
// A dot product computed without FMA rounds every product: its error bound is γ_n·Σ|a_i·b_i|
// instead of one rounding per partial sum, and where the sum cancels (the logits of sharp
// softmaxes, the gradients of the key projection) that is up to ~10× more. GoMLX's pure-Go
// backend computes so; PyTorch's BLAS and XLA fuse. The families are the forward outputs
// (attn_output, attn_output_weights) and the gradients (grad.*); the floor is a few float32
// rounding steps at the magnitude the computation runs at (a small gradient such as grad.key is a
// sum with cancellation of terms as large as the case's other gradients).
const (
	// ErrFactor is how many times PyTorch's own error mhalib may have.
	ErrFactor = 2.0
	// FloorULPs is the absolute floor, in float32 ulps at the family's largest magnitude.
	FloorULPs = 8.0
)

// Family is "grad" for gradients (grad.*) and "output" for the forward results.
func Family(name string) string {
	if strings.HasPrefix(name, "grad.") {
		return "grad"
	}
	return "output"
}

// FamilyScale is the largest |ref64| among the reference's results of name's family (at least 1e-6).
func (r *Reference) FamilyScale(name string) float64 {
	scale := 1e-6
	fam := Family(name)
	for n, t := range r.withPrefix("ref64.") {
		if Family(n) != fam {
			continue
		}
		v, err := Float64s(t)
		if err != nil {
			continue
		}
		for _, x := range v {
			scale = math.Max(scale, math.Abs(x))
		}
	}
	return scale
}

// Result is the comparison of one result tensor.
type Result struct {
	Name     string
	Err      float64 // max |got − ref64|
	TorchErr float64 // max |torch32 − ref64|
	NoFMAErr float64 // max |torch32 no-FMA − ref64| (0 when the file has none)
	Floor    float64
	OK       bool
}

// Bound is the largest error accepted: ErrFactor·max(TorchErr, NoFMAErr) + Floor.
func (r Result) Bound() float64 { return ErrFactor*math.Max(r.TorchErr, r.NoFMAErr) + r.Floor }

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
	return fmt.Sprintf("%-32s err %.3g  torch err %.3g (no FMA %.3g)  ratio %.2f  bound %.3g  %s", r.Name, r.Err, r.TorchErr, r.NoFMAErr, r.Ratio(), r.Bound(), verdict)
}

// Check compares got with the reference's ref64.<name> under the tolerance policy. A shape
// mismatch or a missing reference is an error.
func (r *Reference) Check(name string, got *tensors.Tensor) (Result, error) {
	ref := r.Tensors["ref64."+name]
	if ref == nil {
		return Result{}, fmt.Errorf("parity: %s: no reference ref64.%s", r.Config.Name, name)
	}
	if got == nil {
		return Result{}, fmt.Errorf("parity: %s: %s: no result", r.Config.Name, name)
	}
	if !sameDims(ref.Shape().Dimensions, got.Shape().Dimensions) {
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
	res := Result{Name: name, TorchErr: r.TorchErr[name], NoFMAErr: r.TorchErrNoFMA[name]}
	for i := range want {
		d := math.Abs(have[i] - want[i])
		if math.IsNaN(d) {
			d = math.Inf(1)
		}
		res.Err = math.Max(res.Err, d)
	}
	res.Floor = FloorULPs * math.Ldexp(1, -23) * r.FamilyScale(name)
	res.OK = res.Err <= res.Bound()
	return res, nil
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
