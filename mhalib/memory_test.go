package mhalib_test

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/gomlx/gomlx/backends"
	"github.com/gomlx/gomlx/pkg/core/dtypes"
	. "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/shapes"
	"github.com/gomlx/gomlx/pkg/core/tensors"

	"github.com/mhalab/mhalab/internal/backendtest"
	"github.com/mhalab/mhalab/mhalib"
)

func TestPlainAttentionBytes(t *testing.T) {
	// The long-sequence case: B=1, h=8, L=32768, float32: 32 GiB per copy of the scores.
	if got, want := mhalib.PlainAttentionBytes(1, 8, 32768, 32768, dtypes.Float32), int64(3*32)<<30; got != want {
		t.Fatalf("PlainAttentionBytes = %d, want %d", got, want)
	}
	if limit, source := mhalib.MaxAttentionBytes(); limit != mhalib.DefaultMaxAttentionBytes || source != "mhalib.DefaultMaxAttentionBytes" {
		t.Fatalf("default limit %d (%s), want DefaultMaxAttentionBytes = %d", limit, source, mhalib.DefaultMaxAttentionBytes)
	}
}

// TestPlainAttentionBytesSaturates: sizes whose product overflows int64 must not wrap around to
// a small or negative estimate that passes the limit: the estimate saturates at MaxInt64.
func TestPlainAttentionBytesSaturates(t *testing.T) {
	for _, c := range []struct{ b, h, lq, lk int }{
		{3_000_000_000, 8, 3_000_000_000, 3_000_000_000}, // wraps to a negative int64 when multiplied naively
		{1 << 20, 1 << 20, 1 << 20, 1 << 4},              // 2^64 · 12: wraps to exactly 0
		{1, 1, math.MaxInt64, 2},
	} {
		if got := mhalib.PlainAttentionBytes(c.b, c.h, c.lq, c.lk, dtypes.Float32); got != math.MaxInt64 {
			t.Errorf("PlainAttentionBytes(%d, %d, %d, %d, float32) = %d, want math.MaxInt64 (saturated)", c.b, c.h, c.lq, c.lk, got)
		}
	}
	if got := mhalib.PlainAttentionBytes(0, 8, 1<<40, 1<<40, dtypes.Float32); got != 0 {
		t.Errorf("a zero-sized batch needs %d bytes, want 0", got)
	}
}

// TestPlainAttentionLimitIsFixed: with the default limit, the decision depends only on the
// shapes — never on the machine's free memory at build time (it used to read /proc/meminfo) —
// so a graph that builds once builds again. Graphs are only built here, never compiled: the
// largest one would need 6 GiB to run.
func TestPlainAttentionLimitIsFixed(t *testing.T) {
	backendtest.Run(t, func(t *testing.T, backend backends.Backend) {
		build := func(L int) error {
			return mhalib.Try(func() {
				g := NewGraph(backend, "limit")
				defer g.Finalize()
				x := Parameter(g, "x", shapes.Make(dtypes.Float32, 1, 8, L, 64)) // scores [1, 8, L, L]
				_, _ = mhalib.ScaledDotProductAttention(x, x, x).DoneWithWeights()
			})
		}
		// 3 · 8 · 8192² · 4 B = 6 GiB ≤ 8 GiB, built three times; 3 · 8 · 16384² · 4 B = 24 GiB refused.
		for range 3 {
			if err := build(8192); err != nil {
				t.Fatalf("L=8192 (6 GiB) under the default 8 GiB limit: %v", err)
			}
		}
		err := build(16384)
		var memErr *mhalib.MemoryError
		if !errors.As(err, &memErr) || memErr.Limit != mhalib.DefaultMaxAttentionBytes {
			t.Fatalf("L=16384 (24 GiB): err = %v, want a *MemoryError with the default limit", err)
		}
		if want := "(mhalib.DefaultMaxAttentionBytes); use FlashAttention"; !strings.Contains(err.Error(), want) {
			t.Fatalf("error %q does not contain %q", err, want)
		}
	})
}

func TestPlainAttentionRefusedUpFront(t *testing.T) {
	backendtest.Run(t, func(t *testing.T, backend backends.Backend) {
		mhalib.SetMaxAttentionBytes(1 << 20) // 1 MiB
		defer mhalib.SetMaxAttentionBytes(0)
		x := tensors.FromShape(shapes.Make(dtypes.Float32, 1, 2, 256, 8)) // scores 3 × [1 2 256 256] float32 = 1.5 MiB
		_, err := ExecOnce(backend, func(q, k, v *Node) *Node {
			out, _ := mhalib.ScaledDotProductAttention(q, k, v).DoneWithWeights()
			return out
		}, x, x, x)
		var memErr *mhalib.MemoryError
		if !errors.Is(err, mhalib.ErrAttentionTooLarge) || !errors.As(err, &memErr) {
			t.Fatalf("plain attention over the limit: err = %v, want a *MemoryError", err)
		}
		want := "mhalib: attention scores too large: plain attention would hold 3 copies of the scores (Float32)[1 2 256 256] = 1.5 MiB, more than the limit 1.0 MiB (set with SetMaxAttentionBytes)"
		if !strings.HasPrefix(err.Error(), want) {
			t.Fatalf("error %q\nwant prefix %q", err, want)
		}
		// Flash attention needs no such memory and runs.
		if _, err := ExecOnce(backend, func(q, k, v *Node) *Node {
			return mhalib.FlashAttention(q, k, v).BlockSizes(64, 64).Done()
		}, x, x, x); err != nil {
			t.Fatalf("flash attention: %v", err)
		}
		mhalib.SetMaxAttentionBytes(-1) // no limit
		if _, err := ExecOnce(backend, func(q, k, v *Node) *Node {
			out, _ := mhalib.ScaledDotProductAttention(q, k, v).DoneWithWeights()
			return out
		}, x, x, x); err != nil {
			t.Fatalf("plain attention without a limit: %v", err)
		}
	})
}
