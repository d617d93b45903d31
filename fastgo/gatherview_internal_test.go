package fastgo

import (
	"slices"
	"testing"

	"github.com/gomlx/gomlx/backends/simplego"
	"github.com/gomlx/gomlx/pkg/core/dtypes"
	"github.com/gomlx/gomlx/pkg/core/shapes"
)

// TestSequentialBackend: lazy Gathers need simplego's sequential execution, read from the
// backend's configuration.
func TestSequentialBackend(t *testing.T) {
	for config, want := range map[string]bool{"ops_sequential": true, "ops_parallel": false, "": false} {
		b, err := simplego.New(config)
		if err != nil {
			t.Fatal(err)
		}
		if got := sequentialBackend(b.(*simplego.Backend)); got != want {
			t.Errorf("simplego.New(%q): sequential %v, want %v", config, got, want)
		}
	}
	if backendModeErr != nil {
		t.Fatal(backendModeErr)
	}
}

// TestRowViewRecord: a lazy buffer's record is read while its stamp is there, dropped once
// anything wrote over the stamp (a recycled buffer), and a materialized view writes the rows
// into the buffer and drops the record.
func TestRowViewRecord(t *testing.T) {
	b, err := simplego.New("ops_sequential")
	if err != nil {
		t.Fatal(err)
	}
	backend := b.(*simplego.Backend)
	rows := []float32{1, 2, 3, 4, 5, 6, 7, 8}
	newLazy := func() (*simplego.Buffer, []float32) {
		out, flat, err := newOutput(backend, shapes.Make(dtypes.Float32, 4, 2))
		if err != nil {
			t.Fatal(err)
		}
		if !lazyRows(out, flat, rows) {
			t.Fatal("lazyRows refused a float32 buffer of 8 values")
		}
		return out, flat.([]float32)
	}

	out, flat := newLazy()
	if got, _ := viewOf(out, flat).([]float32); !slices.Equal(got, rows) {
		t.Fatalf("viewOf = %v, want the rows %v", got, rows)
	}
	flat[0], flat[1] = 9, 9 // written again, as by the next op given the recycled buffer
	if got := viewOf(out, flat); got != nil {
		t.Fatalf("viewOf after the stamp was overwritten = %v, want nil", got)
	}
	if _, ok := rowViews.Load(out); ok {
		t.Fatal("a stale record was kept")
	}

	out, flat = newLazy()
	copies := rowViewCopies.Load()
	materializeViews(backend, []*simplego.Buffer{out})
	if !slices.Equal(flat, rows) || rowViewCopies.Load() != copies+1 {
		t.Fatalf("materialized buffer %v (%d copies), want %v (1)", flat, rowViewCopies.Load()-copies, rows)
	}
	if _, ok := rowViews.Load(out); ok {
		t.Fatal("a materialized buffer kept its record")
	}

	out, _ = newLazy()
	dropViews([]*simplego.Buffer{out}, []bool{false})
	if _, ok := rowViews.Load(out); !ok {
		t.Fatal("a reader that is not the last dropped the record")
	}
	dropViews([]*simplego.Buffer{out}, []bool{true})
	if _, ok := rowViews.Load(out); ok {
		t.Fatal("the last reader kept the record")
	}
}
