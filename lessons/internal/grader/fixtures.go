package grader

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/gomlx/gomlx/pkg/core/dtypes"
	"github.com/gomlx/gomlx/pkg/core/tensors"
	"github.com/mhalab/mhalab/mhalib/mhatest"
	"github.com/mhalab/mhalab/torchio"
)

// FixtureDir is where the PyTorch fixtures are, seen from a lesson's folder (go test runs in it).
const FixtureDir = "../testdata"

// Fixture is one file of lessons/testdata, written by PyTorch (lessons/testdata/gen.py).
type Fixture struct {
	Name    string
	Tensors map[string]*tensors.Tensor
	Meta    map[string]string
}

// LoadFixture reads lessons/testdata/<name>.safetensors; it stops the test if it cannot.
func LoadFixture(t testing.TB, name string) *Fixture {
	t.Helper()
	path := filepath.Join(FixtureDir, name+".safetensors")
	f, err := torchio.ReadFile(path)
	if err != nil {
		t.Fatalf("cannot read the PyTorch fixture %s (restore lessons/testdata, e.g. `git checkout lessons/testdata`): %v", path, err)
	}
	return &Fixture{Name: name, Tensors: f.Tensors, Meta: f.Metadata}
}

// Has reports whether the fixture holds key.
func (f *Fixture) Has(key string) bool { _, ok := f.Tensors[key]; return ok }

// Get returns the float tensor key as float64; it stops the test if there is none.
func (f *Fixture) Get(t testing.TB, key string) *mhatest.Tensor {
	t.Helper()
	x, ok := f.Tensors[key]
	if !ok {
		t.Fatalf("fixture %s has no tensor %q", f.Name, key)
	}
	h, err := Host(x)
	if err != nil {
		t.Fatalf("fixture %s, tensor %q: %v", f.Name, key, err)
	}
	return h
}

// Bool returns the bool tensor key with its shape; it stops the test if there is none.
func (f *Fixture) Bool(t testing.TB, key string) ([]bool, []int) {
	t.Helper()
	x, ok := f.Tensors[key]
	if !ok || x.DType() != dtypes.Bool {
		t.Fatalf("fixture %s has no bool tensor %q", f.Name, key)
	}
	return tensors.MustCopyFlatData[bool](x), x.Shape().Dimensions
}

// Config decodes the fixture's "config" metadata (the parity case) into v.
func (f *Fixture) Config(t testing.TB, v any) {
	t.Helper()
	if err := json.Unmarshal([]byte(f.Meta["config"]), v); err != nil {
		t.Fatalf("fixture %s: config metadata: %v", f.Name, err)
	}
}

// TorchMHA is an nn.MultiheadAttention forward that PyTorch ran (a parity case), with the
// projections recomputed on the host in float64 (mhatest.Linear), so that a grader can hand a
// student's function the per-head q, k, v and compare what comes out with PyTorch's result.
type TorchMHA struct {
	Fixture           *Fixture
	B, Lq, Lk, E, H   int
	HeadSizes         []int
	Params            mhatest.MHAParams
	Query, Key, Value *mhatest.Tensor // inputs [B, Lq, E], [B, Lk, kdim], [B, Lk, vdim]
	QP, KP, VP        *mhatest.Tensor // projected: [B, Lq, E], [B, Lk, E], [B, Lk, E]
	Q, K, V           *mhatest.Tensor // heads (even split only): [B, h, L, E/h]
	Out               *mhatest.Tensor // PyTorch's attn_output [B, Lq, E] (float64 run)
	Weights           *mhatest.Tensor // PyTorch's attn_output_weights, [B, Lq, Lk] or [B, h, Lq, Lk]; nil if absent
	WeightsPerHead    bool
	SelfOnly          bool // the case passes only a query (a seed's self-attention): key = value = query
}

// LoadTorchMHA reads a parity case (kind mha or seed001) from lessons/testdata.
func LoadTorchMHA(t testing.TB, name string) *TorchMHA {
	t.Helper()
	f := LoadFixture(t, name)
	var cfg struct {
		B, Lq, Lk, E, H, D int
		HeadSizes          []int `json:"head_sizes"`
		AverageAttnWeights bool  `json:"average_attn_weights"`
		Kind               string
		BatchFirst         *bool `json:"batch_first"`
	}
	f.Config(t, &cfg)
	if cfg.BatchFirst != nil && !*cfg.BatchFirst {
		t.Fatalf("fixture %s is sequence-first; the lessons use batch-first cases", name)
	}
	m := &TorchMHA{Fixture: f, B: cfg.B, Lq: cfg.Lq, Lk: cfg.Lk, E: cfg.E, H: cfg.H, HeadSizes: cfg.HeadSizes}
	if cfg.Kind == "seed001" {
		m.E, m.H = cfg.D, len(cfg.HeadSizes)
	}
	m.Query = f.Get(t, "input.query")
	m.Key, m.Value = m.Query, m.Query
	if f.Has("input.key") {
		m.Key, m.Value = f.Get(t, "input.key"), f.Get(t, "input.value")
	} else {
		m.SelfOnly = true
	}
	E := m.E
	p := mhatest.MHAParams{E: E, NumHeads: m.H, HeadSizes: m.HeadSizes}
	if f.Has("param.in_proj_weight") {
		w := f.Get(t, "param.in_proj_weight") // [3E, E]
		p.Wq, p.Wk, p.Wv = Rows(w, 0, E), Rows(w, E, 2*E), Rows(w, 2*E, 3*E)
	} else {
		p.Wq, p.Wk, p.Wv = f.Get(t, "param.q_proj_weight"), f.Get(t, "param.k_proj_weight"), f.Get(t, "param.v_proj_weight")
	}
	if f.Has("param.in_proj_bias") {
		b := f.Get(t, "param.in_proj_bias") // [3E]
		p.Bq, p.Bk, p.Bv = Rows(b, 0, E), Rows(b, E, 2*E), Rows(b, 2*E, 3*E)
	}
	p.Wo = f.Get(t, "param.out_proj.weight")
	if f.Has("param.out_proj.bias") {
		p.Bo = f.Get(t, "param.out_proj.bias")
	}
	m.Params = p
	m.QP = mhatest.Linear(m.Query, p.Wq, p.Bq)
	m.KP = mhatest.Linear(m.Key, p.Wk, p.Bk)
	m.VP = mhatest.Linear(m.Value, p.Wv, p.Bv)
	if m.HeadSizes == nil {
		m.Q, m.K, m.V = SplitHeadsHost(m.QP, m.H), SplitHeadsHost(m.KP, m.H), SplitHeadsHost(m.VP, m.H)
	}
	m.Out = f.Get(t, "ref64.attn_output")
	if f.Has("ref64.attn_output_weights") {
		m.Weights = f.Get(t, "ref64.attn_output_weights")
		m.WeightsPerHead = m.Weights.Rank() == 4
	}
	return m
}

// OutProj merges per-head outputs [B, h, Lq, dv] and applies out_proj: → [B, Lq, E].
func (m *TorchMHA) OutProj(heads *mhatest.Tensor) *mhatest.Tensor {
	return mhatest.Linear(MergeHeadsHost(heads), m.Params.Wo, m.Params.Bo)
}

// Rows returns x[from:to] along the first axis (a copy).
func Rows(x *mhatest.Tensor, from, to int) *mhatest.Tensor {
	inner := 1
	for _, d := range x.Shape[1:] {
		inner *= d
	}
	shape := append([]int{to - from}, x.Shape[1:]...)
	return mhatest.FromFloat64(x.Data[from*inner:to*inner], shape...)
}

// SplitHeadsHost is the reference head split: x [B, L, D] → [B, h, L, D/h], head n holding the
// columns [n·D/h, (n+1)·D/h) — the layout of PyTorch's nn.MultiheadAttention.
func SplitHeadsHost(x *mhatest.Tensor, h int) *mhatest.Tensor {
	B, L, D := x.Shape[0], x.Shape[1], x.Shape[2]
	if D%h != 0 {
		panic(fmt.Errorf("grader: SplitHeadsHost: width %d is not divisible by %d heads", D, h))
	}
	dk := D / h
	out := mhatest.New(B, h, L, dk)
	for b := range B {
		for n := range h {
			for l := range L {
				for d := range dk {
					out.Set(x.At(b, l, n*dk+d), b, n, l, d)
				}
			}
		}
	}
	return out
}

// MergeHeadsHost is the inverse of SplitHeadsHost: [B, h, L, dk] → [B, L, h·dk].
func MergeHeadsHost(x *mhatest.Tensor) *mhatest.Tensor {
	B, h, L, dk := x.Shape[0], x.Shape[1], x.Shape[2], x.Shape[3]
	out := mhatest.New(B, L, h*dk)
	for b := range B {
		for n := range h {
			for l := range L {
				for d := range dk {
					out.Set(x.At(b, n, l, d), b, l, n*dk+d)
				}
			}
		}
	}
	return out
}

// AverageHeads is PyTorch's average_attn_weights: [B, h, Lq, Lk] → [B, Lq, Lk].
func AverageHeads(w *mhatest.Tensor) *mhatest.Tensor { return mhatest.AverageHeads(w) }
