package cli

import (
	"fmt"
	"io"

	"github.com/gomlx/gomlx/backends"
	"github.com/gomlx/gomlx/backends/simplego"

	"github.com/mhalab/mhalab/fastgo"
	"github.com/mhalab/mhalab/xla"
)

// BackendHelp is the help text of every command's --backend flag.
const BackendHelp = `backend: go, xla:cpu or xla:cuda (default: $GOMLX_BACKEND, else xla:cpu when its plugin loads, else go)`

// CheckBackend returns a *UsageError when spec is not a backend name ("" is the default): a
// mistake on the command line, reported before anything is read or loaded.
func CheckBackend(spec string) error {
	if err := xla.CheckSpec(spec); err != nil {
		return &UsageError{Msg: err.Error()}
	}
	return nil
}

// NewBackend creates the backend spec names ("" = the default) and says on w which one and why:
// "mhalab: backend xla:cpu (default: …)". The caller finalizes it.
func NewBackend(spec string, w io.Writer) (backends.Backend, error) {
	backend, reason, err := NewWithReason(spec)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(w, "mhalab: backend %s\n", reason)
	return backend, nil
}

// NewWithReason is xla.NewWithReason for commands: when the backend is the pure-Go one and this
// binary lacks fastgo's SIMD kernels (built without GOEXPERIMENT=simd), the reason ends with how to
// build it (fastgo.BuildNote), so every command that says which backend it runs says that too.
func NewWithReason(spec string) (backends.Backend, string, error) {
	backend, reason, err := xla.NewWithReason(spec)
	if err != nil {
		return nil, "", err
	}
	_, pureGo := backend.(*simplego.Backend)
	return backend, withBuildNote(reason, pureGo, fastgo.BuildNote()), nil
}

// withBuildNote appends note to reason when the backend is the pure-Go one.
func withBuildNote(reason string, pureGo bool, note string) string {
	if !pureGo || note == "" {
		return reason
	}
	return reason + "; " + note
}
