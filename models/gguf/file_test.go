package gguf

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/mhalab/mhalab/internal/testenv"
)

// synthetic is testdata/synthetic.json, written by gen_fixture.py from what the gguf Python
// package reads back from testdata/synthetic.gguf.
type synthetic struct {
	Size      int64
	Alignment uint64
	Metadata  map[string]struct {
		Type, Elem, Inner string
		Value             json.RawMessage
		Bits              uint32
	}
	Tensors []struct {
		Name, Type string
		Dims       []uint64
		DataOffset int64 `json:"data_offset"`
		Bytes      uint64
		Bits       []uint32
	}
}

func readJSON(t testing.TB, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	if err := d.Decode(v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

func openSynthetic(t testing.TB) (*File, []byte) {
	t.Helper()
	b, err := os.ReadFile("testdata/synthetic.gguf")
	if err != nil {
		t.Fatal(err)
	}
	f, err := Parse(bytes.NewReader(b), int64(len(b)), "synthetic.gguf")
	if err != nil {
		t.Fatal(err)
	}
	return f, b
}

// jsonOf re-encodes a metadata value as JSON for comparison with the fixture.
func jsonOf(t *testing.T, v Value) string {
	var x any
	switch s := v.Any().(type) {
	case []uint8: // json.Marshal would write base64
		n := make([]int, len(s))
		for i, b := range s {
			n[i] = int(b)
		}
		x = n
	case []Value:
		n := make([]any, len(s))
		for i, e := range s {
			n[i] = e.Any()
		}
		x = n
	default:
		x = s
	}
	b, err := json.Marshal(x)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// floats returns a float array as float64s (exact).
func floats(v Value) ([]float64, bool) {
	switch s := v.Any().(type) {
	case []float32:
		f := make([]float64, len(s))
		for i, x := range s {
			f[i] = float64(x)
		}
		return f, true
	case []float64:
		return s, true
	}
	return nil, false
}

func canonical(t *testing.T, raw json.RawMessage) string {
	var x any
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	if err := d.Decode(&x); err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(x)
	return string(b)
}

// TestSyntheticFile: every metadata type, alignment 64, tensor infos and the dequantised values
// of F32, F16 (with ±0, ±Inf, NaN, subnormals), Q8_0 and Q4_1 equal the gguf Python package's,
// bit for bit; Q4_0 is an error naming the tensor.
func TestSyntheticFile(t *testing.T) {
	var want synthetic
	readJSON(t, "testdata/synthetic.json", &want)
	f, b := openSynthetic(t)
	if f.Size != want.Size || int64(len(b)) != want.Size || f.Version != 3 || f.Alignment != want.Alignment {
		t.Fatalf("size %d version %d alignment %d, want %d 3 %d", f.Size, f.Version, f.Alignment, want.Size, want.Alignment)
	}
	if len(f.Metadata) != len(want.Metadata) {
		t.Errorf("%d metadata entries, want %d", len(f.Metadata), len(want.Metadata))
	}
	for key, w := range want.Metadata {
		v, ok := f.Get(key)
		if !ok {
			t.Errorf("metadata %q missing", key)
			continue
		}
		gotType := strings.ToUpper(v.Type.String())
		if gotType != w.Type || (w.Elem != "" && strings.ToUpper(v.Elem.String()) != w.Elem) {
			t.Errorf("%s: type %s of %s, want %s of %s", key, v.Type, v.Elem, w.Type, w.Elem)
		}
		if w.Type == "FLOAT32" {
			if got := math.Float32bits(v.Any().(float32)); got != w.Bits {
				t.Errorf("%s: bits %#x, want %#x", key, got, w.Bits)
			}
			continue
		}
		if w.Inner != "" {
			for i, e := range v.Any().([]Value) {
				if strings.ToUpper(e.Elem.String()) != w.Inner {
					t.Errorf("%s[%d]: element type %s, want %s", key, i, e.Elem, w.Inner)
				}
			}
		}
		if fs, ok := floats(v); ok {
			var wf []float64
			if err := json.Unmarshal(w.Value, &wf); err != nil {
				t.Fatal(err)
			}
			for i := range wf {
				if i >= len(fs) || math.Float64bits(fs[i]) != math.Float64bits(wf[i]) {
					t.Errorf("%s = %v, want %v", key, fs, wf)
					break
				}
			}
			continue
		}
		if got, wantV := jsonOf(t, v), canonical(t, w.Value); got != wantV {
			t.Errorf("%s = %s, want %s", key, got, wantV)
		}
	}
	if len(f.Tensors) != len(want.Tensors) {
		t.Fatalf("%d tensors, want %d", len(f.Tensors), len(want.Tensors))
	}
	for i, w := range want.Tensors {
		ti := f.Tensors[i]
		if ti.Name != w.Name || ti.Type.String() != w.Type || !reflect.DeepEqual(ti.Dims, w.Dims) ||
			f.DataOffset+int64(ti.Offset) != w.DataOffset || ti.Bytes != w.Bytes {
			t.Errorf("tensor %d: %s %s %v at %d, %d bytes; want %s %s %v at %d, %d bytes", i, ti.Name, ti.Type, ti.Dims,
				f.DataOffset+int64(ti.Offset), ti.Bytes, w.Name, w.Type, w.Dims, w.DataOffset, w.Bytes)
		}
		got, shape, err := f.TensorFloat32(w.Name)
		if w.Bits == nil {
			if !errors.Is(err, ErrUnsupportedType) || !errors.Is(err, ErrFormat) || !strings.Contains(err.Error(), `"`+w.Name+`"`) ||
				!strings.Contains(err.Error(), w.Type) {
				t.Errorf("%s: err = %v, want an unsupported-type error naming the tensor and %s", w.Name, err, w.Type)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", w.Name, err)
			continue
		}
		if len(shape) != len(w.Dims) || shape[0] != int(w.Dims[len(w.Dims)-1]) {
			t.Errorf("%s: shape %v for dims %v", w.Name, shape, w.Dims)
		}
		assertBits(t, w.Name, got, w.Bits)
	}
}

func assertBits(t *testing.T, name string, got []float32, want []uint32) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("%s: %d values, want %d", name, len(got), len(want))
		return
	}
	bad := 0
	for i := range got {
		if g := math.Float32bits(got[i]); g != want[i] {
			if bad < 5 {
				t.Errorf("%s[%d] = %g (%#x), want %g (%#x)", name, i, got[i], g, math.Float32frombits(want[i]), want[i])
			}
			bad++
		}
	}
	if bad > 0 {
		t.Errorf("%s: %d of %d values differ", name, bad, len(got))
	}
}

// modelFile is the installed SmolLM2 GGUF, or skips (fails under CI=true, which runs setup).
func modelFile(t testing.TB) string {
	t.Helper()
	root := os.Getenv("MHALAB_MODELS")
	if root == "" {
		cache := os.Getenv("XDG_CACHE_HOME")
		if cache == "" {
			home, _ := os.UserHomeDir()
			cache = filepath.Join(home, ".cache")
		}
		root = filepath.Join(cache, "mhalab", "models")
	}
	p := filepath.Join(root, "smollm2-135m-instruct", "SmolLM2-135M-Instruct.Q4_1.gguf")
	if _, err := os.Stat(p); err != nil {
		testenv.RequireOrSkip(t, fmt.Sprintf("SmolLM2 not installed (scripts/setup.sh --only smollm2): %v", err))
	}
	return p
}

// TestRealFile: the header of SmolLM2-135M-Instruct.Q4_1.gguf and rows of Q8_0, Q4_1 and F32
// tensors equal what the gguf Python package reads, bit for bit.
func TestRealFile(t *testing.T) {
	path := modelFile(t)
	var want struct {
		Summary struct {
			Size                          int64
			Version, TensorCount, KVCount int
			DataOffset                    int64  `json:"data_offset"`
			Arch                          string `json:"general.architecture"`
			Blocks                        int    `json:"llama.block_count"`
			Tokens, Merges                int
			Merge0                        string `json:"merge_0"`
			TokenTypeSum                  int64  `json:"token_type_sum"`
			Types                         map[string]int
		}
		Tensors []struct {
			Name, Type string
			Dims       []uint64
			Rows       []int
			Bits       []uint32
		}
	}
	readJSON(t, "testdata/smollm2_rows.json", &want)
	f, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	s := want.Summary
	if f.Size != s.Size || int(f.Version) != s.Version || f.DataOffset != s.DataOffset || len(f.Metadata) != 33 || len(f.Tensors) != 272 {
		t.Errorf("size %d version %d data offset %d, %d kv, %d tensors; want %d %d %d, 33, 272",
			f.Size, f.Version, f.DataOffset, len(f.Metadata), len(f.Tensors), s.Size, s.Version, s.DataOffset)
	}
	if a, _ := f.String("general.architecture"); a != s.Arch {
		t.Errorf("architecture %q, want %q", a, s.Arch)
	}
	if n, _ := f.Int("llama.block_count"); n != s.Blocks {
		t.Errorf("block_count %d, want %d", n, s.Blocks)
	}
	toks, err := f.Strings("tokenizer.ggml.tokens")
	if err != nil || len(toks) != s.Tokens {
		t.Errorf("tokens: %d, %v; want %d", len(toks), err, s.Tokens)
	}
	merges, err := f.Strings("tokenizer.ggml.merges")
	if err != nil || len(merges) != s.Merges || merges[0] != s.Merge0 {
		t.Errorf("merges: %d, %v; want %d starting %q", len(merges), err, s.Merges, s.Merge0)
	}
	tt, _ := f.Get("tokenizer.ggml.token_type")
	var sum int64
	for _, x := range tt.Any().([]int32) {
		sum += int64(x)
	}
	if sum != s.TokenTypeSum {
		t.Errorf("sum of token types %d, want %d", sum, s.TokenTypeSum)
	}
	types := map[string]int{}
	for _, ti := range f.Tensors {
		types[ti.Type.String()]++
	}
	if !reflect.DeepEqual(types, s.Types) {
		t.Errorf("tensor types %v, want %v", types, s.Types)
	}
	for _, w := range want.Tensors {
		x, shape, err := f.TensorFloat32(w.Name)
		if err != nil {
			t.Fatal(err)
		}
		if ti, _ := f.Tensor(w.Name); ti.Type.String() != w.Type || !reflect.DeepEqual(ti.Dims, w.Dims) {
			t.Errorf("%s: %s %v, want %s %v", w.Name, ti.Type, ti.Dims, w.Type, w.Dims)
		}
		if w.Rows == nil {
			assertBits(t, w.Name, x, w.Bits)
			continue
		}
		cols := shape[len(shape)-1]
		var got []float32
		for _, r := range w.Rows {
			got = append(got, x[r*cols:(r+1)*cols]...)
		}
		assertBits(t, w.Name, got, w.Bits)
	}
}

// TestFloat16 checks all 65,536 half-precision values against a float64 formula.
func TestFloat16(t *testing.T) {
	for h := 0; h < 1<<16; h++ {
		sign := 1.0
		if h>>15 == 1 {
			sign = -1
		}
		e, m := (h>>10)&0x1f, float64(h&0x3ff)
		var want float64
		switch {
		case e == 0:
			want = sign * math.Ldexp(m, -24)
		case e == 31 && m == 0:
			want = math.Inf(int(sign))
		case e == 31:
			want = math.NaN()
		default:
			want = sign * math.Ldexp(1+m/1024, e-15)
		}
		got := Float16(uint16(h))
		if math.IsNaN(want) {
			if !math.IsNaN(float64(got)) {
				t.Fatalf("Float16(%#04x) = %g, want NaN", h, got)
			}
			continue
		}
		if float64(got) != want || math.Signbit(float64(got)) != math.Signbit(want) {
			t.Fatalf("Float16(%#04x) = %g, want %g", h, got, want)
		}
	}
}

// TestTruncatedEverywhere: every prefix of the synthetic file that cuts into the header or a
// tensor's data is an error wrapping ErrFormat (never a panic); cutting only the padding after
// the last tensor is not an error.
func TestTruncatedEverywhere(t *testing.T) {
	f, b := openSynthetic(t)
	end := uint64(0)
	for _, ti := range f.Tensors {
		end = max(end, uint64(f.DataOffset)+ti.Offset+ti.Bytes)
	}
	for n := 0; n < len(b); n++ {
		_, err := Parse(bytes.NewReader(b[:n]), int64(n), "cut.gguf")
		if uint64(n) >= end {
			if err != nil {
				t.Errorf("prefix %d (tensors end at %d): %v", n, end, err)
			}
			continue
		}
		if !errors.Is(err, ErrFormat) {
			t.Fatalf("prefix %d of %d (tensors end at %d): error %v, want one wrapping ErrFormat", n, len(b), end, err)
		}
	}
}

// header builds a GGUF file from parts, for hand-made corrupt files.
type header struct{ bytes.Buffer }

func (h *header) u32(v uint32) *header { binary.Write(&h.Buffer, binary.LittleEndian, v); return h }
func (h *header) u64(v uint64) *header { binary.Write(&h.Buffer, binary.LittleEndian, v); return h }
func (h *header) str(s string) *header { h.u64(uint64(len(s))); h.WriteString(s); return h }
func start(version uint32, tensors, kvs uint64) *header {
	h := &header{}
	h.WriteString("GGUF")
	return h.u32(version).u64(tensors).u64(kvs)
}

// tensor appends a tensor description.
func (h *header) tensor(name string, typ uint32, offset uint64, dims ...uint64) *header {
	h.str(name).u32(uint32(len(dims)))
	for _, d := range dims {
		h.u64(d)
	}
	return h.u32(typ).u64(offset)
}

func (h *header) pad(n int) *header { h.Write(make([]byte, n)); return h }

// TestCorruptHeaders: lying headers give one error naming what is wrong, without a panic or a
// large allocation.
func TestCorruptHeaders(t *testing.T) {
	cases := []struct {
		name string
		file *header
		want string
	}{
		{"empty", &header{}, "not a GGUF file"},
		{"magic", func() *header { h := &header{}; h.WriteString("GGML"); return h.u32(3) }(), `starts with "GGML"`},
		{"version 1", start(1, 0, 0), "version 1"},
		{"big-endian", func() *header { h := &header{}; h.WriteString("GGUF"); return h.u32(0x03000000) }(), "big-endian"},
		{"version 9", start(9, 0, 0), "unknown GGUF version 9"},
		{"huge tensor count", start(3, 1<<62, 0), "tensor count is 4611686018427387904"},
		{"huge kv count", start(3, 0, math.MaxUint64), "metadata count is"},
		{"huge key", start(3, 0, 1).u64(1 << 60).pad(16), "length of metadata key 0"},
		{"huge string", func() *header { h := start(3, 0, 1).str("k").u32(uint32(TypeString)); return h.u64(1 << 40).pad(8) }(), `length of metadata "k"`},
		{"huge array", func() *header {
			h := start(3, 0, 1).str("k").u32(uint32(TypeArray)).u32(uint32(TypeUint64))
			return h.u64(1 << 40).pad(64)
		}(), `element count of metadata "k"`},
		{"array of strings lying", func() *header {
			h := start(3, 0, 1).str("k").u32(uint32(TypeArray)).u32(uint32(TypeString))
			return h.u64(100).pad(64)
		}(), "element count"},
		{"unknown value type", start(3, 0, 1).str("k").u32(13).pad(8), "unknown value type 13"},
		{"unknown element type", start(3, 0, 1).str("k").u32(uint32(TypeArray)).u32(99).u64(1).pad(8), "unknown array element type 99"},
		{"deep arrays", func() *header {
			h := start(3, 0, 1).str("k").u32(uint32(TypeArray))
			for i := 0; i < 20; i++ {
				h.u32(uint32(TypeArray)).u64(1)
			}
			return h.pad(8)
		}(), "nested deeper"},
		{"bool 2", start(3, 0, 1).str("k").u32(uint32(TypeBool)).pad(0).u32(2), "neither 0 nor 1"},
		{"duplicate key", start(3, 0, 2).str("k").u32(uint32(TypeUint8)).pad(1).str("k").u32(uint32(TypeUint8)).pad(1), `"k" appears twice`},
		{"alignment type", start(3, 0, 1).str("general.alignment").u32(uint32(TypeUint64)).u64(32), "want uint32"},
		{"alignment 48", start(3, 0, 1).str("general.alignment").u32(uint32(TypeUint32)).u32(48), "not a power of two"},
		{"alignment 0", start(3, 0, 1).str("general.alignment").u32(uint32(TypeUint32)).u32(0), "not a power of two"},
		{"zero dims", start(3, 1, 0).tensor("w", 0, 0).pad(64), `tensor "w" has 0 dims`},
		{"five dims", start(3, 1, 0).tensor("w", 0, 0, 1, 1, 1, 1, 1).pad(64), `tensor "w" has 5 dims`},
		{"zero dim", start(3, 1, 0).tensor("w", 0, 0, 4, 0).pad(64), `"w" has a zero dim`},
		{"overflowing dims", start(3, 1, 0).tensor("w", 0, 0, 1<<32, 1<<32).pad(64), "overflow"},
		{"overflowing bytes", start(3, 1, 0).tensor("w", 0, 0, 1<<31, 1<<31).pad(64), "overflow"},
		{"unknown tensor type", start(3, 1, 0).tensor("w", 4, 0, 32).pad(64), `"w" has unknown type 4`},
		{"partial block", start(3, 1, 0).tensor("w", uint32(TensorQ4_1), 0, 16).pad(64), "not whole Q4_1 blocks of 32"},
		{"data past the end", start(3, 1, 0).tensor("w", 0, 0, 64).pad(64), `tensor "w"`},
		{"misaligned offset", start(3, 1, 0).tensor("w", 0, 4, 1).pad(64), "not a multiple of the alignment 32"},
		{"huge offset", start(3, 1, 0).tensor("w", 0, 1<<63, 1).pad(64), "past the end"},
		{"overlap", start(3, 2, 0).tensor("a", 0, 0, 16).tensor("b", 0, 32, 16).pad(128), `"a" and "b" overlap`},
		{"duplicate tensor", start(3, 2, 0).tensor("a", 0, 0, 1).tensor("a", 0, 32, 1).pad(128), `"a" appears twice`},
	}
	for _, c := range cases {
		b := c.file.Bytes()
		f, err := Parse(bytes.NewReader(b), int64(len(b)), "bad.gguf")
		if err == nil {
			t.Errorf("%s: parsed (%d tensors), want an error containing %q", c.name, len(f.Tensors), c.want)
			continue
		}
		if !errors.Is(err, ErrFormat) || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "bad.gguf") {
			t.Errorf("%s: error %q, want one wrapping ErrFormat naming bad.gguf and containing %q", c.name, err, c.want)
		}
	}
}

// TestSmallValidFiles: an empty file (no tensors, no metadata), empty arrays, a v2 file.
func TestSmallValidFiles(t *testing.T) {
	for _, h := range []*header{
		start(3, 0, 0),
		start(2, 0, 0),
		start(3, 0, 1).str("k").u32(uint32(TypeArray)).u32(uint32(TypeString)).u64(0),
		start(3, 1, 0).tensor("w", 0, 0, 2).pad(24 + 8),
	} {
		b := h.Bytes()
		f, err := Parse(bytes.NewReader(b), int64(len(b)), "ok.gguf")
		if err != nil {
			t.Errorf("%v", err)
			continue
		}
		for _, ti := range f.Tensors {
			if _, _, err := f.TensorFloat32(ti.Name); err != nil {
				t.Error(err)
			}
		}
	}
}

// TestMetadataAccessors: typed getters say which key is missing or has the wrong type.
func TestMetadataAccessors(t *testing.T) {
	f, _ := openSynthetic(t)
	if n, err := f.Int("t.u32"); err != nil || n != 4000000000 {
		t.Errorf("Int(t.u32) = %d, %v", n, err)
	}
	if _, err := f.Int("t.u64"); err == nil || !strings.Contains(err.Error(), `"t.u64" is a uint64, want an integer`) {
		t.Errorf("Int(t.u64 above MaxInt64): %v", err)
	}
	if _, err := f.String("nope"); err == nil || !strings.Contains(err.Error(), `metadata "nope" is missing`) {
		t.Errorf("missing: %v", err)
	}
	if _, err := f.Strings("t.arr_i32"); err == nil || !strings.Contains(err.Error(), "array of int32, want array of string") {
		t.Errorf("wrong type: %v", err)
	}
	if x, err := f.Float("t.f64"); err != nil || x != -2.5e-300 {
		t.Errorf("Float = %g, %v", x, err)
	}
	if b, err := f.Bool("t.bool"); err != nil || !b {
		t.Errorf("Bool = %v, %v", b, err)
	}
	if _, err := f.Tensor("nope"); err == nil || !strings.Contains(err.Error(), `no tensor "nope"`) {
		t.Errorf("Tensor(nope): %v", err)
	}
}
