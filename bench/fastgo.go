package bench

import (
	"github.com/gomlx/gomlx/backends"
	"github.com/mhalab/mhalab/fastgo"
	"github.com/mhalab/mhalab/xla"
)

// GoWithoutFastGo is a backend spec only the bench knows: the pure-Go backend with fastgo
// switched off (GoMLX's own DotGeneral), so that `--backends go,go-gomlx` times both side by
// side in one run, under one load.
const GoWithoutFastGo = "go-gomlx"

// newBackend is xla.NewWithReason, plus GoWithoutFastGo.
func newBackend(spec string) (backends.Backend, string, error) {
	if spec != GoWithoutFastGo {
		return xla.NewWithReason(spec)
	}
	b, _, err := xla.NewWithReason("go")
	return b, GoWithoutFastGo + " (the pure-Go backend with GoMLX's own DotGeneral: fastgo switched off for its cases)", err
}

// newBackendDevices is newBackend with devices devices for an XLA spec (0: its default). The
// pure-Go backend keeps its one device: the devices suite skips it, the other suites run on it.
func newBackendDevices(spec string, devices int) (backends.Backend, string, error) {
	if devices > 0 && spec != GoWithoutFastGo && spec != xla.SpecGo {
		return xla.NewWithDevices(spec, devices)
	}
	return newBackend(spec)
}

// withFastGo runs fn with fastgo switched off for GoWithoutFastGo and as it is otherwise.
func withFastGo(spec string, fn func()) {
	if spec == GoWithoutFastGo {
		prev := fastgo.SetEnabled(false)
		defer fastgo.SetEnabled(prev)
	}
	fn()
}
