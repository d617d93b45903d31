package nb

import (
	"fmt"
	"sync"

	"github.com/gomlx/gomlx/backends"

	"github.com/mhalab/mhalab/xla"
)

// Notebook 13 (attention across devices): a backend with several devices and pictures of who
// holds what.

var (
	devicesOnce    sync.Once
	devicesBackend backends.Backend
	devicesWhy     string
)

// Devices returns a backend with n devices and n, or — when the XLA CPU plugin is missing or
// the notebook runs on the pure-Go backend ($GOMLX_BACKEND=go) — Backend() and 1, with a line
// saying which. XLA makes n virtual CPU devices that share the machine's cores. One per cell
// program (each XLA CPU client reserves ~2.5 GiB of address space).
func Devices(n int) (backends.Backend, int, string) {
	devicesOnce.Do(func() {
		if b := Backend(); b.Name() != "xla" {
			devicesBackend, devicesWhy = b, fmt.Sprintf("%s has one device: every step below runs on 1 device (run on xla:cpu to see %d)", BackendReason(), n)
			return
		}
		b, reason, err := xla.NewWithDevices(xla.SpecCPU, n)
		if err != nil {
			devicesBackend, devicesWhy = Backend(), fmt.Sprintf("%d devices unavailable (%v): 1 device", n, err)
			return
		}
		devicesBackend, devicesWhy = b, reason+": virtual CPU devices sharing this machine's cores"
	})
	return devicesBackend, devicesBackend.NumDevices(), devicesWhy
}

// deviceColours colour device 0, 1, 2, … in the pictures.
var deviceColours = []string{"#8ecae6", "#ffb703", "#90be6d", "#f28482", "#cdb4db", "#bde0fe", "#ffd6a5", "#caffbf"}

// DeviceColour is the colour of device d in the pictures.
func DeviceColour(d int) string { return deviceColours[d%len(deviceColours)] }

// Ownership draws who holds what: one row per device, one column per item (a head, a sequence
// of the batch, a key), each tile coloured by the device that owns it, or grey on every device
// for a replicated item (owner −1). owner(i) is the device holding item i.
func Ownership(title, items string, devices, count int, owner func(i int) int) string {
	legend := map[string]string{"#dddddd": "held by every device (replicated)"}
	for d := range devices {
		legend[DeviceColour(d)] = fmt.Sprintf("device %d", d)
	}
	return BlockGrid(title, "device", items, devices, count, max(12, 240/count), 20, func(d, i int) Tile {
		switch o := owner(i); {
		case o < 0:
			return Tile{Colour: "#dddddd"}
		case o == d:
			return Tile{Colour: DeviceColour(d), Label: fmt.Sprint(i)}
		}
		return Tile{}
	}, legend)
}
