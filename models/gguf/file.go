package gguf

import (
	"errors"
	"fmt"
	"io"
	"math/bits"
	"os"
	"sort"
)

// ErrFormat is wrapped by every error about the content of a GGUF file (truncated, corrupt,
// inconsistent, or an unsupported type): test for it with errors.Is.
var ErrFormat = errors.New("gguf")

// ErrUnsupportedType is wrapped (with ErrFormat) by TensorFloat32's error for a tensor type
// this package does not dequantise.
var ErrUnsupportedType = errors.New("unsupported tensor type")

// DefaultAlignment is the data alignment when general.alignment is absent.
const DefaultAlignment = 32

// maxDims is ggml's GGML_MAX_DIMS.
const maxDims = 4

// KV is one metadata entry.
type KV struct {
	Key   string
	Value Value
}

// TensorInfo describes one tensor: its name, its dims in GGUF order (fastest-varying first,
// ggml's ne), its type, and where its bytes are.
type TensorInfo struct {
	Name   string
	Dims   []uint64   // ne[0], ne[1], …: a matrix of R rows of C columns is [C, R]
	Type   TensorType // element type (F32, Q4_1, …)
	Offset uint64     // from the start of the data section (a multiple of the alignment)
	Bytes  uint64     // size of the data in bytes
}

// NumElements is the product of the dims.
func (t *TensorInfo) NumElements() uint64 {
	n := uint64(1)
	for _, d := range t.Dims {
		n *= d // checked for overflow when the file was parsed
	}
	return n
}

// Shape is the row-major shape (the dims reversed): [R, C] for a matrix of R rows.
func (t *TensorInfo) Shape() []int {
	s := make([]int, len(t.Dims))
	for i, d := range t.Dims {
		s[len(t.Dims)-1-i] = int(d)
	}
	return s
}

// File is a parsed GGUF file: its metadata and tensor descriptions. Tensor data is read on
// demand from the underlying reader (TensorBytes, TensorFloat32).
type File struct {
	Name       string // the path, or a name for messages
	Version    uint32
	Metadata   []KV // in file order
	Tensors    []TensorInfo
	Alignment  uint64
	DataOffset int64 // where the data section starts
	Size       int64 // file size

	kv      map[string]int
	tensors map[string]int
	r       io.ReaderAt
	closer  io.Closer
}

// Open opens and parses the GGUF file at path. Close it when done.
func Open(path string) (*File, error) {
	fh, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	st, err := fh.Stat()
	if err != nil {
		fh.Close()
		return nil, err
	}
	if !st.Mode().IsRegular() {
		fh.Close()
		return nil, fmt.Errorf("%w: %s is not a regular file", ErrFormat, path)
	}
	f, err := Parse(fh, st.Size(), path)
	if err != nil {
		fh.Close()
		return nil, err
	}
	f.closer = fh
	return f, nil
}

// Close closes the underlying file (when opened with Open).
func (f *File) Close() error {
	if f.closer == nil {
		return nil
	}
	err := f.closer.Close()
	f.closer = nil
	return err
}

// Parse reads the header, metadata and tensor descriptions of a GGUF file of size bytes from
// r; name appears in errors. It checks that every tensor's data lies inside the file.
func Parse(r io.ReaderAt, size int64, name string) (*File, error) {
	f, err := parse(r, size, name)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrFormat, name, err)
	}
	return f, nil
}

func parse(r io.ReaderAt, size int64, name string) (*File, error) {
	if size < 0 {
		return nil, fmt.Errorf("negative size %d", size)
	}
	d := newDecoder(r, size)
	f := &File{Name: name, Size: size, r: r, kv: map[string]int{}, tensors: map[string]int{}}

	// 1. Header.
	var magic [4]byte
	if err := d.read(magic[:], "the magic number"); err != nil {
		return nil, fmt.Errorf("not a GGUF file (%w)", err)
	}
	if string(magic[:]) != "GGUF" {
		return nil, fmt.Errorf("not a GGUF file: it starts with %q, not \"GGUF\"", magic[:])
	}
	v, err := d.u32("the version")
	if err != nil {
		return nil, err
	}
	switch {
	case v == 2 || v == 3:
	case v == 1:
		return nil, fmt.Errorf("GGUF version 1 (32-bit counts) is not supported; convert the file to version 3")
	case bits.ReverseBytes32(v) == 2 || bits.ReverseBytes32(v) == 3:
		return nil, fmt.Errorf("big-endian GGUF (version %d byte-swapped) is not supported", bits.ReverseBytes32(v))
	default:
		return nil, fmt.Errorf("unknown GGUF version %d (this reader knows 2 and 3)", v)
	}
	f.Version = v
	// Each tensor description takes at least 24 bytes (name length, n_dims, type, offset),
	// each key-value at least 13 (key length, value type, a 1-byte value).
	nTensors, err := d.count("the tensor count", 24)
	if err != nil {
		return nil, err
	}
	nKV, err := d.count("the metadata count", 13)
	if err != nil {
		return nil, err
	}

	// 2. Metadata.
	f.Metadata = make([]KV, 0, nKV)
	for i := 0; i < nKV; i++ {
		key, err := d.str(fmt.Sprintf("metadata key %d", i))
		if err != nil {
			return nil, err
		}
		if _, dup := f.kv[key]; dup {
			return nil, fmt.Errorf("metadata key %q appears twice", key)
		}
		t, err := d.u32(fmt.Sprintf("the value type of %q", key))
		if err != nil {
			return nil, err
		}
		val, err := d.value(ValueType(t), fmt.Sprintf("metadata %q", key), 0)
		if err != nil {
			return nil, err
		}
		f.kv[key] = len(f.Metadata)
		f.Metadata = append(f.Metadata, KV{Key: key, Value: val})
	}
	f.Alignment = DefaultAlignment
	if kv, ok := f.kv["general.alignment"]; ok {
		val := f.Metadata[kv].Value
		a, isU32 := val.v.(uint32)
		if !isU32 {
			return nil, fmt.Errorf("metadata \"general.alignment\" is a %s, want uint32", val.Type)
		}
		if a == 0 || a&(a-1) != 0 {
			return nil, fmt.Errorf("metadata \"general.alignment\" is %d, not a power of two", a)
		}
		f.Alignment = uint64(a)
	}

	// 3. Tensor descriptions.
	f.Tensors = make([]TensorInfo, 0, nTensors)
	for i := 0; i < nTensors; i++ {
		ti, err := d.tensorInfo(i)
		if err != nil {
			return nil, err
		}
		if _, dup := f.tensors[ti.Name]; dup {
			return nil, fmt.Errorf("tensor %q appears twice", ti.Name)
		}
		f.tensors[ti.Name] = len(f.Tensors)
		f.Tensors = append(f.Tensors, ti)
	}

	// 4. The data section starts at the next multiple of the alignment; every tensor must lie
	// inside the file, aligned, without overlapping another.
	start := (uint64(d.pos) + f.Alignment - 1) / f.Alignment * f.Alignment
	if nTensors > 0 && start > uint64(size) {
		return nil, fmt.Errorf("truncated: the data section would start at byte %d, past the end of the file (%d bytes)", start, size)
	}
	f.DataOffset = int64(start)
	avail := uint64(0)
	if start < uint64(size) {
		avail = uint64(size) - start
	}
	order := make([]int, len(f.Tensors))
	for i := range f.Tensors {
		t := &f.Tensors[i]
		order[i] = i
		if t.Offset%f.Alignment != 0 {
			return nil, fmt.Errorf("tensor %q: offset %d is not a multiple of the alignment %d", t.Name, t.Offset, f.Alignment)
		}
		if t.Offset > avail || t.Bytes > avail-t.Offset {
			return nil, fmt.Errorf("truncated: tensor %q (%s %v, %d bytes at data offset %d) ends past the end of the file (%d bytes of data)",
				t.Name, t.Type, t.Dims, t.Bytes, t.Offset, avail)
		}
	}
	sort.Slice(order, func(a, b int) bool { return f.Tensors[order[a]].Offset < f.Tensors[order[b]].Offset })
	for k := 1; k < len(order); k++ {
		p, q := &f.Tensors[order[k-1]], &f.Tensors[order[k]]
		if p.Offset+p.Bytes > q.Offset {
			return nil, fmt.Errorf("tensors %q and %q overlap (bytes %d+%d and %d)", p.Name, q.Name, p.Offset, p.Bytes, q.Offset)
		}
	}
	return f, nil
}

// tensorInfo reads the description of tensor i.
func (d *decoder) tensorInfo(i int) (TensorInfo, error) {
	var t TensorInfo
	var err error
	if t.Name, err = d.str(fmt.Sprintf("the name of tensor %d", i)); err != nil {
		return t, err
	}
	nd, err := d.u32(fmt.Sprintf("the number of dims of tensor %q", t.Name))
	if err != nil {
		return t, err
	}
	if nd == 0 || nd > maxDims {
		return t, fmt.Errorf("tensor %q has %d dims (1 to %d allowed)", t.Name, nd, maxDims)
	}
	t.Dims = make([]uint64, nd)
	n := uint64(1)
	for j := range t.Dims {
		if t.Dims[j], err = d.u64(fmt.Sprintf("dim %d of tensor %q", j, t.Name)); err != nil {
			return t, err
		}
		if t.Dims[j] == 0 {
			return t, fmt.Errorf("tensor %q has a zero dim: %v", t.Name, t.Dims[:j+1])
		}
		hi, lo := bits.Mul64(n, t.Dims[j])
		if hi != 0 || lo > 1<<62 {
			return t, fmt.Errorf("tensor %q: dims %v overflow", t.Name, t.Dims[:j+1])
		}
		n = lo
	}
	tt, err := d.u32(fmt.Sprintf("the type of tensor %q", t.Name))
	if err != nil {
		return t, err
	}
	t.Type = TensorType(tt)
	info, known := tensorTypes[t.Type]
	if !known {
		return t, fmt.Errorf("tensor %q has unknown type %d", t.Name, tt)
	}
	if t.Dims[0]%info.blockSize != 0 {
		return t, fmt.Errorf("tensor %q: its rows of %d elements are not whole %s blocks of %d", t.Name, t.Dims[0], info.name, info.blockSize)
	}
	hi, lo := bits.Mul64(n/info.blockSize, info.blockBytes)
	if hi != 0 || lo > 1<<62 {
		return t, fmt.Errorf("tensor %q: %s %v overflows", t.Name, info.name, t.Dims)
	}
	t.Bytes = lo
	if t.Offset, err = d.u64(fmt.Sprintf("the offset of tensor %q", t.Name)); err != nil {
		return t, err
	}
	return t, nil
}

// Get returns the metadata value for key.
func (f *File) Get(key string) (Value, bool) {
	i, ok := f.kv[key]
	if !ok {
		return Value{}, false
	}
	return f.Metadata[i].Value, true
}

func (f *File) missing(key string) error {
	return fmt.Errorf("%w: %s: metadata %q is missing", ErrFormat, f.Name, key)
}

func (f *File) wrongType(key string, v Value, want string) error {
	t := v.Type.String()
	if v.Type == TypeArray {
		t = "array of " + v.Elem.String()
	}
	return fmt.Errorf("%w: %s: metadata %q is a %s, want %s", ErrFormat, f.Name, key, t, want)
}

// String returns the string value of key.
func (f *File) String(key string) (string, error) {
	v, ok := f.Get(key)
	if !ok {
		return "", f.missing(key)
	}
	s, ok := v.v.(string)
	if !ok {
		return "", f.wrongType(key, v, "string")
	}
	return s, nil
}

// Int returns the integer value of key (any integer type) as an int.
func (f *File) Int(key string) (int, error) {
	v, ok := f.Get(key)
	if !ok {
		return 0, f.missing(key)
	}
	n, ok := v.Int()
	if !ok || int64(int(n)) != n {
		return 0, f.wrongType(key, v, "an integer")
	}
	return int(n), nil
}

// Float returns the floating-point value of key (float32 or float64) as a float64.
func (f *File) Float(key string) (float64, error) {
	v, ok := f.Get(key)
	if !ok {
		return 0, f.missing(key)
	}
	x, ok := v.Float()
	if !ok {
		return 0, f.wrongType(key, v, "a float")
	}
	return x, nil
}

// Bool returns the boolean value of key.
func (f *File) Bool(key string) (bool, error) {
	v, ok := f.Get(key)
	if !ok {
		return false, f.missing(key)
	}
	b, ok := v.v.(bool)
	if !ok {
		return false, f.wrongType(key, v, "bool")
	}
	return b, nil
}

// Strings returns the array of strings of key.
func (f *File) Strings(key string) ([]string, error) {
	v, ok := f.Get(key)
	if !ok {
		return nil, f.missing(key)
	}
	s, ok := v.v.([]string)
	if !ok {
		return nil, f.wrongType(key, v, "array of string")
	}
	return s, nil
}

// Tensor returns the description of the named tensor.
func (f *File) Tensor(name string) (*TensorInfo, error) {
	i, ok := f.tensors[name]
	if !ok {
		return nil, fmt.Errorf("%w: %s: no tensor %q", ErrFormat, f.Name, name)
	}
	return &f.Tensors[i], nil
}

// TensorBytes returns the raw bytes of the named tensor.
func (f *File) TensorBytes(name string) ([]byte, *TensorInfo, error) {
	t, err := f.Tensor(name)
	if err != nil {
		return nil, nil, err
	}
	b := make([]byte, t.Bytes)
	// A ReaderAt may report io.EOF along with a full read at the end of the file.
	if n, err := f.r.ReadAt(b, f.DataOffset+int64(t.Offset)); err != nil && (n < len(b) || !errors.Is(err, io.EOF)) {
		return nil, t, fmt.Errorf("%w: %s: reading tensor %q: %w", ErrFormat, f.Name, name, err)
	}
	return b, t, nil
}
