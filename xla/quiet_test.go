package xla_test

import (
	"io"
	"os"
	"testing"

	"github.com/mhalab/mhalab/xla"
)

// TestNewPrintsNothing: a library never prints; the reason is NewWithReason's to return.
func TestNewPrintsNothing(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	saved := os.Stderr
	os.Stderr = w
	b, err := xla.New("go")
	os.Stderr = saved
	w.Close()
	out, _ := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	b.Finalize()
	if len(out) > 0 {
		t.Errorf("xla.New wrote to stderr: %q", out)
	}
}
