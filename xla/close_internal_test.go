package xla

import (
	"testing"

	"github.com/gomlx/go-xla/pkg/pjrt"
	. "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/mhalab/mhalab/internal/testenv"
)

// TestCloseFreesDroppedBuffersBeforeFinalize: results dropped by the program have their PJRT
// buffers freed by garbage-collector cleanups; Close must let those run before it destroys the
// client (on xla:cuda a cleanup racing the client's destruction crashed mhalab bench).
func TestCloseFreesDroppedBuffersBeforeFinalize(t *testing.T) {
	b, err := New(SpecCPU)
	if err != nil {
		testenv.RequireOrSkip(t, err.Error())
		return
	}
	exec := MustNewExec(b, func(x *Node) *Node { return AddScalar(x, 1) })
	before := pjrt.BuffersAlive()
	const n = 16
	for i := range n {
		out := exec.MustExec1([]float32{float32(i), 2, 3})
		_ = out // dropped: its device buffer now waits for a cleanup
	}
	during := pjrt.BuffersAlive()
	if during < before+n {
		t.Fatalf("live PJRT buffers %d after %d dropped results, %d before: the test needs them alive", during, n, before)
	}
	atFinalize := int64(-1)
	closeWith(b, func() {
		atFinalize = pjrt.BuffersAlive()
		exec.Finalize()
		b.Finalize()
	})
	if atFinalize > before {
		t.Errorf("live PJRT buffers when the client was destroyed: %d (%d before the %d dropped results, %d after): Close did not wait for their cleanups", atFinalize, before, n, during)
	}
}
