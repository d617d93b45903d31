package mhalib

import (
	"fmt"
	"math"
	"math/bits"
	"sync/atomic"

	"github.com/dustin/go-humanize"
	"github.com/gomlx/gomlx/pkg/core/dtypes"
	"github.com/gomlx/gomlx/pkg/core/shapes"
)

// Memory of plain attention, and a refusal up front.
//
// Plain attention materialises the scores [B, h, Lq, Lk], in several copies at once: the logits,
// their exponentials and the weights (XLA CPU keeps about that many alive). At B = 1, h = 8,
// L = 32768 in float32 one copy is 32 GiB. Handing such a graph to a backend fails late and
// badly — an allocation failure deep inside XLA, the kernel's out-of-memory killer, or hours of
// swapping — so mhalib refuses it when the graph is built, with an error that gives the
// shapes, the estimate and the limit, and points to FlashAttention, whose memory is
// O(Lq·BlockK).
//
// The limit is a fixed number, DefaultMaxAttentionBytes, unless the program sets another with
// SetMaxAttentionBytes: it does not depend on the machine nor on its load, so a graph that builds
// once builds again. Set it to what the device can hold (a GPU's memory, a small laptop's RAM),
// or remove it with SetMaxAttentionBytes(-1).
//
// Sizes in the error are written by go-humanize (IBytes: "1.5 MiB"), a module GoMLX itself
// imports: mhalib adds no dependency beyond GoMLX and the standard library (ARCHITECTURE.md).

// DefaultMaxAttentionBytes is the default limit of PlainAttentionBytes: 8 GiB, e.g. B = 1, h = 8,
// L = 8192 in float32 (6 GiB) builds and L = 16384 (24 GiB) is refused.
const DefaultMaxAttentionBytes int64 = 8 << 30

// ScoresCopies is how many [B, h, Lq, Lk] tensors plain attention is assumed to hold at once.
const ScoresCopies = 3

// PlainAttentionBytes estimates the memory plain attention needs for its scores:
// ScoresCopies · B · h · Lq · Lk · (bytes per element of dtype). A product that does not fit in an
// int64 saturates at math.MaxInt64 (it never wraps around to a size that would pass the limit);
// negative sizes count as 0.
func PlainAttentionBytes(batch, heads, lq, lk int, dtype dtypes.DType) int64 {
	total := uint64(1)
	for _, n := range []int{ScoresCopies, batch, heads, lq, lk, dtype.Size()} {
		if n <= 0 {
			return 0
		}
		hi, lo := bits.Mul64(total, uint64(n))
		if hi != 0 || lo > math.MaxInt64 {
			return math.MaxInt64
		}
		total = lo
	}
	return int64(total)
}

// ErrAttentionTooLarge is wrapped by the error plain attention reports when its estimated
// memory (PlainAttentionBytes) exceeds the limit (MaxAttentionBytes).
var ErrAttentionTooLarge = fmt.Errorf("mhalib: attention scores too large")

// MemoryError is the error of plain attention refused for its memory.
type MemoryError struct {
	Scores shapes.Shape // [B, h, Lq, Lk]
	Need   int64        // PlainAttentionBytes
	Limit  int64        // MaxAttentionBytes at the time
	Source string       // where the limit comes from
}

// Error implements error.
func (e *MemoryError) Error() string {
	return fmt.Sprintf("%v: plain attention would hold %d copies of the scores %s = %s, more than the limit %s (%s); "+
		"use FlashAttention (memory O(Lq·BlockK)), or raise the limit with mhalib.SetMaxAttentionBytes",
		ErrAttentionTooLarge, ScoresCopies, e.Scores, humanize.IBytes(uint64(e.Need)), humanize.IBytes(uint64(e.Limit)), e.Source)
}

// Unwrap makes errors.Is(err, ErrAttentionTooLarge) true.
func (e *MemoryError) Unwrap() error { return ErrAttentionTooLarge }

var maxAttentionBytes atomic.Int64 // 0: default; < 0: no limit

// SetMaxAttentionBytes sets the most memory plain attention may need (see PlainAttentionBytes),
// for the whole process: n > 0 sets the limit, 0 restores DefaultMaxAttentionBytes, n < 0 removes
// the limit. It affects graphs built afterwards.
func SetMaxAttentionBytes(n int64) { maxAttentionBytes.Store(n) }

// MaxAttentionBytes returns the limit in effect (≤ 0: none) and where it comes from.
func MaxAttentionBytes() (limit int64, source string) {
	switch n := maxAttentionBytes.Load(); {
	case n > 0:
		return n, "set with SetMaxAttentionBytes"
	case n < 0:
		return -1, "no limit (SetMaxAttentionBytes)"
	}
	return DefaultMaxAttentionBytes, "mhalib.DefaultMaxAttentionBytes"
}

// CheckPlainAttentionMemory returns a *MemoryError if plain attention over scores
// [batch, heads, lq, lk] of dtype needs more memory than MaxAttentionBytes, else nil.
func CheckPlainAttentionMemory(batch, heads, lq, lk int, dtype dtypes.DType) error {
	limit, source := MaxAttentionBytes()
	need := PlainAttentionBytes(batch, heads, lq, lk, dtype)
	if limit > 0 && need > limit {
		return &MemoryError{Scores: shapes.Make(dtype, batch, heads, lq, lk), Need: need, Limit: limit, Source: source}
	}
	return nil
}

// checkPlainAttentionMemory panics with the *MemoryError of CheckPlainAttentionMemory (graph
// building; Exec returns it as an error).
func checkPlainAttentionMemory(batch, heads, lq, lk int, dtype dtypes.DType) {
	if err := CheckPlainAttentionMemory(batch, heads, lq, lk, dtype); err != nil {
		panic(err)
	}
}
