package mhalib_test

import (
	"errors"
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
	for n, want := range map[int64]string{512: "512 B", 1536: "1.5 KiB", 3 << 20: "3.0 MiB", 96 << 30: "96.0 GiB"} {
		if got := mhalib.FormatBytes(n); got != want {
			t.Errorf("FormatBytes(%d) = %q, want %q", n, got, want)
		}
	}
	if limit, source := mhalib.MaxAttentionBytes(); limit <= 0 || !strings.Contains(source, "MemAvailable") {
		t.Logf("default limit %d (%s): /proc/meminfo not readable here", limit, source)
	}
}

func TestPlainAttentionRefusedUpFront(t *testing.T) {
	backendtest.Run(t, func(t *testing.T, backend backends.Backend) {
		mhalib.SetMaxAttentionBytes(1 << 20) // 1 MiB
		defer mhalib.SetMaxAttentionBytes(0)
		x := tensors.FromShape(shapes.Make(dtypes.Float32, 1, 2, 256, 8)) // scores 3 × [1 2 256 256] float32 = 1.5 MiB
		_, err := ExecOnce(backend, func(q, k, v *Node) *Node {
			out, _ := mhalib.ScaledDotProductAttention(q, k, v).Done()
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
			out, _ := mhalib.ScaledDotProductAttention(q, k, v).Done()
			return out
		}, x, x, x); err != nil {
			t.Fatalf("plain attention without a limit: %v", err)
		}
	})
}
