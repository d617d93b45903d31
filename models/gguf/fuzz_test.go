package gguf

import (
	"bytes"
	"errors"
	"os"
	"runtime/metrics"
	"testing"
)

// allocBound is the most the fuzz target may allocate for an input of n bytes: dequantised
// float32 takes at most 6.4 bytes per byte of Q4_1 (plus the raw bytes), decoded metadata a few
// Go headers per item of at least 1 byte (plus the descriptions built for error messages); the
// slack covers allocation accounting, which the runtime updates per span for small objects.
func allocBound(n int) uint64 { return 64*uint64(n) + 8<<20 }

// heapAllocs is the process's cumulative heap allocation in bytes.
func heapAllocs() uint64 {
	s := []metrics.Sample{{Name: "/gc/heap/allocs:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// FuzzParse: no input makes Parse or TensorFloat32 panic; every failure wraps ErrFormat; what
// parses has its tensors inside the file; and parsing plus dequantising allocates at most
// allocBound(len(input)) bytes: the checks in decoder.count (a count or length larger than the
// remaining bytes is an error before anything is allocated) keep a lying header from allocating.
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
	// Lying counts: a string, a u8 array, a string array, the tensor and metadata counts and a
	// tensor's dims, each claiming far more than the file holds.
	f.Add(start(3, 0, 1).u64(1 << 40).Bytes())
	f.Add(start(3, 0, 1).str("k").u32(uint32(TypeArray)).u32(uint32(TypeUint8)).u64(1 << 30).Bytes())
	f.Add(start(3, 0, 1).str("k").u32(uint32(TypeArray)).u32(uint32(TypeString)).u64(1 << 28).Bytes())
	f.Add(start(3, 1<<40, 1<<40).Bytes())
	f.Add(start(3, 1, 0).tensor("w", uint32(TensorF32), 0, 1<<28, 4).pad(64).Bytes())
	f.Fuzz(func(t *testing.T, b []byte) {
		before := heapAllocs()
		defer func() {
			if got := heapAllocs() - before; got > allocBound(len(b)) {
				t.Fatalf("allocated %d bytes for a %d-byte input (bound %d)", got, len(b), allocBound(len(b)))
			}
		}()
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
