package torchio

import (
	"bytes"
	"fmt"
	"io"
	"math"
	"os"
	"sort"

	"github.com/gomlx/gomlx/pkg/core/dtypes"
	"github.com/gomlx/gomlx/pkg/core/shapes"
	"github.com/gomlx/gomlx/pkg/core/tensors"
	"github.com/nlpodyssey/safetensors"

	"github.com/mhalab/mhalab/internal/atomicfile"
)

// Limits on what a safetensors file may declare. They keep a corrupt or hostile header from
// producing absurd shapes; memory itself is bounded by the file size (see Parse).
const (
	// MaxRank is the largest rank accepted for a tensor.
	MaxRank = 16
	// MaxDim is the largest size accepted for one axis.
	MaxDim = math.MaxInt32
)

// File is the content of a safetensors file.
type File struct {
	// Tensors by name, on the host.
	Tensors map[string]*tensors.Tensor
	// Names in the order of their data in the file.
	Names []string
	// Metadata is the file's "__metadata__" (string to string), possibly empty.
	Metadata map[string]string
}

var toDType = map[safetensors.DType]dtypes.DType{
	safetensors.BOOL: dtypes.Bool,
	safetensors.U8:   dtypes.Uint8,
	safetensors.I8:   dtypes.Int8,
	safetensors.I16:  dtypes.Int16,
	safetensors.U16:  dtypes.Uint16,
	safetensors.F16:  dtypes.Float16,
	safetensors.BF16: dtypes.BFloat16,
	safetensors.I32:  dtypes.Int32,
	safetensors.U32:  dtypes.Uint32,
	safetensors.F32:  dtypes.Float32,
	safetensors.F64:  dtypes.Float64,
	safetensors.I64:  dtypes.Int64,
	safetensors.U64:  dtypes.Uint64,
}

var fromDType = func() map[dtypes.DType]safetensors.DType {
	m := make(map[dtypes.DType]safetensors.DType, len(toDType))
	for s, d := range toDType {
		m[d] = s
	}
	return m
}()

// Parse decodes a whole safetensors file held in data.
//
// The header is parsed and validated by github.com/nlpodyssey/safetensors (a Go port of the reference
// implementation's validation): its length must fit in data (and be at most 100 MB), each tensor's data_offsets must
// be contiguous, in bounds and equal to its dtype size × element count (computed with overflow checks),
// and the last tensor must end at the end of data. Parse adds: rank ≤ MaxRank, every axis ≤ MaxDim, and a
// known dtype. So the tensors it allocates add up to at most len(data) bytes: a bad header length,
// truncated data or a wrong dtype return an error, never a large allocation or a panic.
func Parse(data []byte) (*File, error) {
	n, meta, err := safetensors.ReadMetadata(data)
	if err != nil {
		return nil, fmt.Errorf("torchio: %w", err)
	}
	body := data[8+n:]
	infos := meta.Tensors()
	f := &File{
		Tensors:  make(map[string]*tensors.Tensor, len(infos)),
		Names:    make([]string, 0, len(infos)),
		Metadata: map[string]string{},
	}
	for k, v := range meta.Metadata() {
		f.Metadata[k] = v
	}
	for name := range infos {
		f.Names = append(f.Names, name)
	}
	sort.Slice(f.Names, func(i, j int) bool {
		a, b := infos[f.Names[i]].DataOffsets, infos[f.Names[j]].DataOffsets
		return a[0] < b[0] || (a[0] == b[0] && f.Names[i] < f.Names[j])
	})
	for _, name := range f.Names {
		info := infos[name]
		t, err := fromInfo(name, info, body[info.DataOffsets[0]:info.DataOffsets[1]])
		if err != nil {
			return nil, err
		}
		f.Tensors[name] = t
	}
	return f, nil
}

func fromInfo(name string, info *safetensors.TensorInfo, data []byte) (*tensors.Tensor, error) {
	dtype, ok := toDType[info.DType]
	if !ok {
		return nil, fmt.Errorf("torchio: tensor %q has unsupported dtype %s", name, info.DType)
	}
	if len(info.Shape) > MaxRank {
		return nil, fmt.Errorf("torchio: tensor %q has rank %d, more than %d", name, len(info.Shape), MaxRank)
	}
	dims := make([]int, len(info.Shape))
	for i, d := range info.Shape {
		if d > MaxDim {
			return nil, fmt.Errorf("torchio: tensor %q has shape %v: axis %d larger than %d", name, info.Shape, i, MaxDim)
		}
		dims[i] = int(d)
	}
	shape := shapes.Make(dtype, dims...)
	// ReadMetadata checked len(data) == element count × dtype size with overflow checks; check again
	// what the copy relies on, in GoMLX's terms.
	if uintptr(len(data)) != shape.Memory() {
		return nil, fmt.Errorf("torchio: tensor %q: %d bytes of data for shape %s", name, len(data), shape)
	}
	t := tensors.FromShape(shape)
	if shape.Size() == 0 {
		return t, nil
	}
	if dtype == dtypes.Bool {
		// Go's bool must be 0 or 1: normalise any other byte (PyTorch writes 0/1).
		tensors.MustMutableFlatData(t, func(flat []bool) {
			for i, b := range data {
				flat[i] = b != 0
			}
		})
		return t, nil
	}
	if err := t.MutableBytes(func(dst []byte) { copy(dst, data) }); err != nil {
		return nil, fmt.Errorf("torchio: tensor %q: %w", name, err)
	}
	return t, nil
}

// ReadFile reads and parses the safetensors file at path (see Parse).
func ReadFile(path string) (*File, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("torchio: %w", err)
	}
	f, err := Parse(data)
	if err != nil {
		return nil, fmt.Errorf("%w (file %s)", err, path)
	}
	return f, nil
}

// view adapts a host tensor to safetensors.View.
type view struct {
	dtype safetensors.DType
	shape []uint64
	data  []byte
}

func (v view) DType() safetensors.DType { return v.dtype }
func (v view) Shape() []uint64          { return v.shape }
func (v view) Data() []byte             { return v.data }
func (v view) DataLen() uint64          { return uint64(len(v.data)) }

func toView(name string, t *tensors.Tensor) (view, error) {
	if t == nil {
		return view{}, fmt.Errorf("torchio: tensor %q is nil", name)
	}
	dt, ok := fromDType[t.DType()]
	if !ok {
		return view{}, fmt.Errorf("torchio: tensor %q has dtype %s, which safetensors cannot store", name, t.DType())
	}
	v := view{dtype: dt, shape: make([]uint64, t.Rank())}
	for i, d := range t.Shape().Dimensions {
		v.shape[i] = uint64(d)
	}
	if t.Size() == 0 {
		return v, nil
	}
	err := t.ConstBytes(func(data []byte) { v.data = bytes.Clone(data) })
	if err != nil {
		return view{}, fmt.Errorf("torchio: tensor %q: %w", name, err)
	}
	return v, nil
}

// Write writes tensors (and optional string metadata) to w in the safetensors format, in the layout
// the reference writer uses (data sorted by dtype alignment then name, header padded to 8 bytes).
func Write(w io.Writer, ts map[string]*tensors.Tensor, metadata map[string]string) error {
	views := make(map[string]view, len(ts))
	names := make([]string, 0, len(ts))
	for name := range ts {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		if name == "__metadata__" {
			return fmt.Errorf("torchio: %q is reserved for metadata, not a tensor name", name)
		}
		v, err := toView(name, ts[name])
		if err != nil {
			return err
		}
		views[name] = v
	}
	if err := safetensors.SerializeToWriter(views, metadata, w); err != nil {
		return fmt.Errorf("torchio: %w", err)
	}
	return nil
}

// WriteFile writes tensors and metadata to the safetensors file at path (see Write), whole or
// not at all: through a temporary file renamed over path (internal/atomicfile).
func WriteFile(path string, ts map[string]*tensors.Tensor, metadata map[string]string) error {
	var buf bytes.Buffer
	if err := Write(&buf, ts, metadata); err != nil {
		return err
	}
	if err := atomicfile.WriteFile(path, buf.Bytes()); err != nil {
		return fmt.Errorf("torchio: %w", err)
	}
	return nil
}
