package xla

import (
	"fmt"
	"os"

	"github.com/gomlx/gomlx/backends"
)

// Devices. One XLA backend (one PJRT client) can drive several devices: a graph compiled for a
// device mesh (GoMLX's SPMD or AutoSharding strategies) runs one program per device. The CPU
// plugin makes as many virtual devices as its client option "cpu_device_count" asks for (its
// default is 4; $XLA_FLAGS' --xla_force_host_platform_device_count is ignored by this plugin):
// they share the machine's cores, so they show the cost of partitioning and how the work
// spreads over the cores, not what as many real devices would give. A CUDA plugin has one device per GPU. The pure-Go backend has one device.
//
// Each XLA CPU client reserves about 2.45 GiB of address space: create one backend per device
// count and reuse it.

// cpuDeviceCountOption is the CPU plugin's client option for its number of devices.
const cpuDeviceCountOption = "cpu_device_count"

// MaxDevices bounds the device count NewWithDevices accepts (a typo guard: every virtual CPU
// device costs memory and threads).
const MaxDevices = 64

// NewWithDevices creates the backend named by spec (as NewWithReason) with devices devices:
// for "xla:cpu", that many virtual CPU devices; for "xla:cuda", it checks the plugin has at
// least that many; for "go", devices must be 1. devices 0 means the backend's default; with
// devices > 0 the empty spec means $GOMLX_BACKEND or else "xla:cpu". The
// reason says what was chosen, including the device count.
func NewWithDevices(spec string, devices int) (backend backends.Backend, reason string, err error) {
	if devices < 0 || devices > MaxDevices {
		return nil, "", fmt.Errorf("xla: --devices %d: want 1 to %d", devices, MaxDevices)
	}
	if devices == 0 {
		return NewWithReason(spec)
	}
	if err := CheckSpec(spec); err != nil {
		return nil, "", err
	}
	if spec == "" {
		// Several devices: only XLA has them, so the default is $GOMLX_BACKEND or xla:cpu,
		// never a silent fallback to the one-device pure-Go backend.
		spec = SpecCPU
		if env := os.Getenv(BackendEnv); env != "" {
			if err := CheckSpec(env); err != nil {
				return nil, "", fmt.Errorf("xla: $%s: %w", BackendEnv, err)
			}
			spec = env
		}
	}
	b, note, err := newSpecDevices(spec, devices)
	if err != nil {
		return nil, "", err
	}
	return b, fmt.Sprintf("%s (requested), %d device(s)%s", spec, b.NumDevices(), note), nil
}
