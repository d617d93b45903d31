package xla_test

import (
	"strings"
	"testing"

	"github.com/mhalab/mhalab/internal/testenv"
	"github.com/mhalab/mhalab/xla"
)

func TestGoBackendHasOneDevice(t *testing.T) {
	b, _, err := xla.NewWithDevices(xla.SpecGo, 1)
	if err != nil {
		t.Fatal(err)
	}
	if n := b.NumDevices(); n != 1 {
		t.Errorf("go backend: %d devices, want 1", n)
	}
	b.Finalize()
	_, _, err = xla.NewWithDevices(xla.SpecGo, 2)
	if err == nil || !strings.Contains(err.Error(), "one device") || !strings.Contains(err.Error(), xla.SpecCPU) {
		t.Errorf("NewWithDevices(go, 2) error = %v, want one naming the single device and %s", err, xla.SpecCPU)
	}
}

func TestDeviceCountOutOfRangeIsAnError(t *testing.T) {
	for _, n := range []int{-1, xla.MaxDevices + 1} {
		if _, _, err := xla.NewWithDevices(xla.SpecCPU, n); err == nil || !strings.Contains(err.Error(), "--devices") {
			t.Errorf("NewWithDevices(xla:cpu, %d) error = %v, want one naming --devices", n, err)
		}
	}
}

// TestCPUVirtualDevices asks the CPU plugin for 3 devices (not its default 4) and runs a graph.
func TestCPUVirtualDevices(t *testing.T) {
	if _, err := xla.FindPlugin("cpu"); err != nil {
		testenv.RequireOrSkip(t, "XLA CPU plugin: "+err.Error())
	}
	b, reason, err := xla.NewWithDevices(xla.SpecCPU, 3)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Finalize()
	if n := b.NumDevices(); n != 3 {
		t.Errorf("xla:cpu with 3 devices: backend has %d", n)
	}
	if !strings.Contains(reason, "3 device(s)") {
		t.Errorf("reason %q does not say 3 device(s)", reason)
	}
	sumOfSquares(t, b)
}
