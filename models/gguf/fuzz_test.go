package gguf

import (
	"bytes"
	"errors"
	"os"
	"testing"
)

// FuzzParse: no input makes Parse or TensorFloat32 panic; every failure wraps ErrFormat; what
// parses has its tensors inside the file. Allocations are bounded by the checks in decoder.count
// (a count or length larger than the remaining bytes is an error before anything is allocated).
// The corpus (testdata/fuzz/FuzzParse) holds the inputs the fuzzer found interesting; run
//
//	go test ./models/gguf -run '^$' -fuzz FuzzParse -fuzztime 10m
func FuzzParse(f *testing.F) {
	if b, err := os.ReadFile("testdata/synthetic.gguf"); err == nil {
		f.Add(b)
	}
	f.Add(start(3, 1, 1).str("general.alignment").u32(uint32(TypeUint32)).u32(16).tensor("w", uint32(TensorQ4_1), 0, 32).pad(64).Bytes())
	f.Add(start(3, 2, 0).tensor("a", uint32(TensorQ8_0), 0, 32).tensor("b", uint32(TensorF16), 64, 4).pad(128).Bytes())
	f.Add(start(3, 0, 1).str("k").u32(uint32(TypeArray)).u32(uint32(TypeArray)).u64(1).u32(uint32(TypeString)).u64(1).str("x").Bytes())
	f.Fuzz(func(t *testing.T, b []byte) {
		file, err := Parse(bytes.NewReader(b), int64(len(b)), "fuzz.gguf")
		if err != nil {
			if !errors.Is(err, ErrFormat) {
				t.Fatalf("error %v does not wrap ErrFormat", err)
			}
			return
		}
		for _, ti := range file.Tensors {
			if file.DataOffset+int64(ti.Offset)+int64(ti.Bytes) > int64(len(b)) {
				t.Fatalf("tensor %q ends past the file", ti.Name)
			}
			x, _, err := file.TensorFloat32(ti.Name)
			if err != nil {
				if !errors.Is(err, ErrUnsupportedType) {
					t.Fatalf("tensor %q: %v", ti.Name, err)
				}
				continue
			}
			if uint64(len(x)) != ti.NumElements() {
				t.Fatalf("tensor %q: %d values for %d elements", ti.Name, len(x), ti.NumElements())
			}
		}
		for _, kv := range file.Metadata {
			_ = kv.Value.String()
		}
	})
}
