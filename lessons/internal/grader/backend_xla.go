//go:build lessons_xla

package grader

import (
	"github.com/gomlx/gomlx/backends"
	"github.com/mhalab/mhalab/xla"
)

// With the build tag lessons_xla the exercises can also run on XLA (cgo, and the PJRT plugin
// scripts/setup.sh installs); without it they build with Go alone.
func init() {
	newXLA = func(spec string) (backends.Backend, error) {
		b, _, err := xla.NewWithReason(spec)
		return b, err
	}
}
