package torchio

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gomlx/gomlx/pkg/core/dtypes"
	"github.com/gomlx/gomlx/pkg/core/dtypes/bfloat16"
	"github.com/gomlx/gomlx/pkg/core/tensors"
	"github.com/x448/float16"
)

// TestReadOfficialWriter reads a file written by safetensors.torch.save_file (parity/torchio_testdata.py).
func TestReadOfficialWriter(t *testing.T) {
	f, err := ReadFile(filepath.Join("testdata", "dtypes.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	if got := f.Metadata["written_by"]; got != "safetensors.torch" {
		t.Errorf("metadata written_by = %q", got)
	}
	want := map[string]dtypes.DType{
		"f16": dtypes.Float16, "bf16": dtypes.BFloat16, "f32": dtypes.Float32, "f64": dtypes.Float64,
		"i64": dtypes.Int64, "i32": dtypes.Int32, "i16": dtypes.Int16, "i8": dtypes.Int8, "u8": dtypes.Uint8,
	}
	for name, dt := range want {
		x := f.Tensors[name]
		if x == nil {
			t.Fatalf("tensor %q missing; have %v", name, f.Names)
		}
		if x.DType() != dt || fmt.Sprint(x.Shape().Dimensions) != "[2 3]" {
			t.Errorf("%s: got %s, want %s[2 3]", name, x.Shape(), dt)
			continue
		}
		var got []float64
		x.MustConstFlatData(func(flat any) {
			switch v := flat.(type) {
			case []float16.Float16:
				for _, e := range v {
					got = append(got, float64(e.Float32()))
				}
			case []bfloat16.BFloat16:
				for _, e := range v {
					got = append(got, float64(e.Float32()))
				}
			default:
				for _, e := range strings.Fields(strings.Trim(fmt.Sprint(v), "[]")) {
					var g float64
					fmt.Sscan(e, &g)
					got = append(got, g)
				}
			}
		})
		if fmt.Sprint(got) != "[0 1 2 3 4 5]" {
			t.Errorf("%s: values %v, want arange(6)", name, got)
		}
	}
	if b := f.Tensors["bool"]; b == nil || b.DType() != dtypes.Bool || fmt.Sprint(tensors.MustCopyFlatData[bool](b)) != "[false true false true false true]" {
		t.Errorf("bool tensor: %v", b)
	}
	if s := f.Tensors["scalar"]; s == nil || !s.IsScalar() || tensors.ToScalar[float32](s) != 2.5 {
		t.Errorf("scalar tensor: %v", s)
	}
	if e := f.Tensors["empty"]; e == nil || e.Size() != 0 || fmt.Sprint(e.Shape().Dimensions) != "[0 3]" {
		t.Errorf("empty tensor: %v", e)
	}
}

func TestRoundTrip(t *testing.T) {
	in := map[string]*tensors.Tensor{
		"w":      tensors.FromFlatDataAndDimensions([]float32{1, -2, 3.5, 4, 5, 6}, 2, 3),
		"d":      tensors.FromFlatDataAndDimensions([]float64{1e-300, -2}, 2),
		"mask":   tensors.FromFlatDataAndDimensions([]bool{true, false, false, true}, 1, 4),
		"u8":     tensors.FromFlatDataAndDimensions([]uint8{0, 255}, 2),
		"i64":    tensors.FromFlatDataAndDimensions([]int64{-1 << 40}, 1, 1, 1),
		"scalar": tensors.FromScalar(float32(7)),
		"empty":  tensors.FromFlatDataAndDimensions([]float32{}, 3, 0),
	}
	var buf bytes.Buffer
	if err := Write(&buf, in, map[string]string{"k": "v"}); err != nil {
		t.Fatal(err)
	}
	hdr := binary.LittleEndian.Uint64(buf.Bytes()[:8])
	if hdr%8 != 0 {
		t.Errorf("header length %d not padded to 8 bytes", hdr)
	}
	out, err := Parse(buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	if out.Metadata["k"] != "v" {
		t.Errorf("metadata = %v", out.Metadata)
	}
	if len(out.Tensors) != len(in) {
		t.Fatalf("got %d tensors, want %d", len(out.Tensors), len(in))
	}
	for name, x := range in {
		y := out.Tensors[name]
		if y == nil || !x.Shape().Equal(y.Shape()) || (x.Size() > 0 && !x.Equal(y)) {
			t.Errorf("%s: wrote %v, read %v", name, x, y)
		}
	}
	if err := Write(&buf, map[string]*tensors.Tensor{"__metadata__": in["w"]}, nil); err == nil {
		t.Error("Write accepted a tensor named __metadata__")
	}
}

// header builds a file from a JSON header and n bytes of data.
func header(js string, n int) []byte {
	b := binary.LittleEndian.AppendUint64(nil, uint64(len(js)))
	b = append(b, js...)
	return append(b, make([]byte, n)...)
}

func TestCorruptInput(t *testing.T) {
	good := header(`{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}`, 8)
	if _, err := Parse(good); err != nil {
		t.Fatalf("good file: %v", err)
	}
	huge := binary.LittleEndian.AppendUint64(nil, 1<<62)
	cases := []struct {
		name string
		data []byte
		want string
	}{
		{"empty", nil, "header too small"},
		{"short", []byte{1, 2, 3}, "header too small"},
		{"header length 2^62", append(huge, good[8:]...), "header too large"},
		{"header length past the end", append(binary.LittleEndian.AppendUint64(nil, 1000), good[8:]...), "invalid header length"},
		{"truncated data", good[:len(good)-1], "incomplete"},
		{"trailing data", append(append([]byte{}, good...), 0), "incomplete"},
		{"not JSON", header(`{"a":`, 0), "invalid header"},
		{"unknown dtype", header(`{"a":{"dtype":"F8_E4M3","shape":[2],"data_offsets":[0,2]}}`, 2), "DType"},
		{"wrong size for dtype", header(`{"a":{"dtype":"F64","shape":[2],"data_offsets":[0,8]}}`, 8), "mismatch"},
		{"shape overflow", header(`{"a":{"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,0]}}`, 0), "overflow"},
		{"negative dim", header(`{"a":{"dtype":"F32","shape":[-1],"data_offsets":[0,0]}}`, 0), "natural"},
		{"gap between tensors", header(`{"a":{"dtype":"U8","shape":[1],"data_offsets":[1,2]}}`, 2), "offset"},
		{"offsets reversed", header(`{"a":{"dtype":"U8","shape":[1],"data_offsets":[2,1]}}`, 2), "offset"},
		{"axis too large", header(`{"a":{"dtype":"F32","shape":[0,4294967296],"data_offsets":[0,0]}}`, 0), "larger than"},
		{"rank too large", header(`{"a":{"dtype":"F32","shape":[1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1],"data_offsets":[0,4]}}`, 4), "rank"},
		{"metadata not strings", header(`{"__metadata__":{"a":1}}`, 0), "expected string"},
		{"missing shape", header(`{"a":{"dtype":"F32","data_offsets":[0,0]}}`, 0), "expected 3 keys"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f, err := Parse(c.data)
			if err == nil {
				t.Fatalf("no error; got %v", f.Names)
			}
			if !strings.Contains(err.Error(), c.want) || !strings.HasPrefix(err.Error(), "torchio: ") {
				t.Errorf("error %q, want it to start with \"torchio: \" and contain %q", err, c.want)
			}
		})
	}
}

// FuzzParse: Parse never panics, allocates tensors of at most len(data) bytes in all, and what it
// accepts survives a Write/Parse round trip. Run: go test ./torchio -run XXX -fuzz FuzzParse -fuzztime 60s
func FuzzParse(f *testing.F) {
	for _, name := range []string{"dtypes.safetensors", "mha_state_dict.safetensors"} {
		data, err := readTestdata(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add(header(`{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}`, 8))
	f.Add(header(`{"__metadata__":{"x":"y"},"m":{"dtype":"BOOL","shape":[3],"data_offsets":[0,3]}}`, 3))
	f.Add(header(`{"a":{"dtype":"U8","shape":[0,5],"data_offsets":[0,0]}}`, 0))
	f.Fuzz(func(t *testing.T, data []byte) {
		file, err := Parse(data)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "torchio: ") {
				t.Fatalf("error without prefix: %v", err)
			}
			return
		}
		var total uintptr
		for _, x := range file.Tensors {
			total += x.Memory()
		}
		if total > uintptr(len(data)) {
			t.Fatalf("tensors take %d bytes from a %d-byte file", total, len(data))
		}
		var buf bytes.Buffer
		if err := Write(&buf, file.Tensors, file.Metadata); err != nil {
			t.Fatalf("Write of a parsed file: %v", err)
		}
		again, err := Parse(buf.Bytes())
		if err != nil {
			t.Fatalf("Parse of a written file: %v", err)
		}
		for name, x := range file.Tensors {
			y := again.Tensors[name]
			if y == nil || !x.Shape().Equal(y.Shape()) {
				t.Fatalf("%s: round trip changed %s to %v", name, x.Shape(), y)
			}
			if x.Size() > 0 && !bytesEqual(x, y) {
				t.Fatalf("%s: round trip changed the data", name)
			}
		}
	})
}

func bytesEqual(x, y *tensors.Tensor) bool {
	var a, b []byte
	x.ConstBytes(func(d []byte) { a = bytes.Clone(d) })
	y.ConstBytes(func(d []byte) { b = bytes.Clone(d) })
	return bytes.Equal(a, b)
}

func readTestdata(name string) ([]byte, error) {
	return os.ReadFile(filepath.Join("testdata", name))
}
