package xla

import (
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/gomlx/go-xla/pkg/pjrt"
	"github.com/gomlx/gomlx/backends"
	"github.com/gomlx/gomlx/backends/simplego"
	gomlxxla "github.com/gomlx/gomlx/backends/xla"
)

// Backend specs accepted by New.
const (
	SpecGo   = "go"       // GoMLX's pure-Go backend
	SpecCPU  = "xla:cpu"  // XLA with the PJRT CPU plugin
	SpecCUDA = "xla:cuda" // XLA with a PJRT CUDA plugin
)

// Specs returns the valid backend specs, in the order Available reports them.
func Specs() []string { return []string{SpecGo, SpecCPU, SpecCUDA} }

// SimpleGoConfig is the configuration New gives GoMLX's pure-Go backend. "ops_sequential" runs
// the ops of a graph one after another (each op still uses every core): in GoMLX v0.26 the
// parallel op scheduler deadlocks on a 2-core machine when four or more independent DotGenerals
// are ready at once (each holds a worker slot while waiting for workers for its own batch), as
// in an unrolled flash-attention graph.
const SimpleGoConfig = "ops_sequential"

// BackendEnv is the environment variable GoMLX reads for its default backend; the empty spec
// honours it.
const BackendEnv = "GOMLX_BACKEND"

// CheckSpec returns an error listing the valid specs when spec is not one of them
// ("" is valid: it asks for the default).
func CheckSpec(spec string) error {
	if spec == "" || slices.Contains(Specs(), spec) {
		return nil
	}
	return fmt.Errorf("xla: unknown backend %q: valid backends are %q (or empty for the default)", spec, Specs())
}

// New creates the backend named by spec ("", "go", "xla:cpu" or "xla:cuda"). It prints
// nothing: NewWithReason also says which backend it chose and why, for the caller to show.
func New(spec string) (backends.Backend, error) {
	b, _, err := NewWithReason(spec)
	return b, err
}

// NewWithReason creates the backend named by spec and says, in one line starting with the
// chosen spec, why that one. The empty spec means $GOMLX_BACKEND when set, else "xla:cpu"
// when its plugin loads, else "go". An explicit spec never falls back to another backend:
// a missing plugin is an error naming the paths searched and scripts/setup.sh.
func NewWithReason(spec string) (backend backends.Backend, reason string, err error) {
	if err := CheckSpec(spec); err != nil {
		return nil, "", err
	}
	if spec != "" {
		b, note, err := newSpec(spec)
		if err != nil {
			return nil, "", err
		}
		return b, spec + " (requested)" + note, nil
	}
	if env := os.Getenv(BackendEnv); env != "" {
		if err := CheckSpec(env); err != nil {
			return nil, "", fmt.Errorf("xla: $%s: %w", BackendEnv, err)
		}
		b, note, err := newSpec(env)
		if err != nil {
			return nil, "", fmt.Errorf("xla: $%s=%s: %w", BackendEnv, env, err)
		}
		return b, fmt.Sprintf("%s (from %s=%s)%s", env, BackendEnv, env, note), nil
	}
	b, note, errCPU := newSpec(SpecCPU)
	if errCPU == nil {
		return b, SpecCPU + " (default: the XLA CPU plugin loads)" + note, nil
	}
	b, _, err = newSpec(SpecGo)
	if err != nil {
		return nil, "", err
	}
	return b, fmt.Sprintf("%s (default: XLA CPU unavailable: %v)", SpecGo, errCPU), nil
}

// newSpec creates the backend of a valid, non-empty spec. For an XLA spec, note describes
// the plugin: " [PJRT API 0.81, /path/pjrt_c_api_cpu_plugin.so]".
func newSpec(spec string) (b backends.Backend, note string, err error) {
	return newSpecDevices(spec, 0)
}

// newSpecDevices is newSpec with a device count: 0 keeps the plugin's default; n > 0 asks
// the CPU plugin for n virtual devices (option "cpu_device_count") and checks that another
// plugin has at least n.
func newSpecDevices(spec string, devices int) (b backends.Backend, note string, err error) {
	if spec == SpecGo {
		if devices > 1 {
			return nil, "", fmt.Errorf("xla: backend %s has one device, %d requested: use %s --devices %d (virtual CPU devices) or %s", SpecGo, devices, SpecCPU, devices, SpecCUDA)
		}
		b, err = simplego.New(SimpleGoConfig)
		return b, "", err
	}
	platform := strings.TrimPrefix(spec, "xla:")
	plugin, err := loadPlugin(platform)
	if err != nil {
		return nil, "", err
	}
	// An absolute path makes GoMLX load exactly this file, with no search and no download.
	// GoMLX enables shared host/device buffers only for a plugin named "cpu": ask for them.
	config := plugin.Path()
	if platform == "cpu" {
		config += ",shared_buffers"
	}
	clientCreated.Store(true) // XLA reads $XLA_FLAGS now (see EnableHLODump)
	if platform == "cpu" {
		tuneMalloc() // keep XLA's temporary buffers between executions (malloc.go)
	}
	// An absolute path never triggers GoMLX's automatic download; turning it off as well costs
	// nothing and covers a future GoMLX that would look anyway. Done here, not on import.
	gomlxxla.EnableAutoInstall(false)
	var options pjrt.NamedValuesMap
	if platform == "cpu" && devices > 0 {
		options = pjrt.NamedValuesMap{cpuDeviceCountOption: int64(devices)}
	}
	err = catch(func() error {
		var err error
		b, err = gomlxxla.NewWithOptions(config, options)
		return err
	})
	if err != nil {
		return nil, "", fmt.Errorf("xla: creating backend %s from %s: %w", spec, plugin.Path(), err)
	}
	if devices > 0 && b.NumDevices() < devices {
		have := b.NumDevices()
		b.Finalize()
		return nil, "", fmt.Errorf("xla: backend %s has %d device(s), %d requested", spec, have, devices)
	}
	major, minor := plugin.Version()
	var tf32 string
	if platform == "cuda" {
		tf32, _ = prepareCUDA() // already run by loadPlugin: its note
	}
	return b, fmt.Sprintf(" [PJRT API %d.%d, %s%s]", major, minor, plugin.Path(), tf32), nil
}
