package bench

import (
	"testing"

	"github.com/mhalab/mhalab/fastgo"
)

// TestWithFastGo: the go-gomlx cases run with fastgo off, every other backend's with fastgo as
// it was, and the setting is restored afterwards.
func TestWithFastGo(t *testing.T) {
	defer fastgo.SetEnabled(fastgo.SetEnabled(true))
	for _, tc := range []struct {
		spec string
		want bool
	}{{GoWithoutFastGo, false}, {"go", true}, {"xla:cpu", true}} {
		var inside bool
		withFastGo(tc.spec, func() { inside = fastgo.Enabled() })
		if inside != tc.want || !fastgo.Enabled() {
			t.Errorf("%s: fastgo enabled inside = %v (want %v), after = %v (want true)", tc.spec, inside, tc.want, fastgo.Enabled())
		}
	}
	if _, _, err := newBackend(GoWithoutFastGo); err != nil {
		t.Errorf("newBackend(%q): %v", GoWithoutFastGo, err)
	}
}
