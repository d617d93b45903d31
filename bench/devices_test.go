package bench

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/mhalab/mhalab/internal/testenv"
	"github.com/mhalab/mhalab/xla"
)

// TestBenchDevicesQuick runs the devices suite on xla:cpu with 2 virtual devices: every case
// runs on 1 and 2 devices, with the all-reduce bytes of the step, and the table says the CPU
// devices are virtual.
func TestBenchDevicesQuick(t *testing.T) {
	if _, err := xla.FindPlugin("cpu"); err != nil {
		testenv.RequireOrSkip(t, "xla:cpu: "+err.Error())
	}
	var stdout, stderr bytes.Buffer
	cfg := Config{Quick: true, Suites: []string{"devices"}, Backends: []string{xla.SpecCPU}, Devices: 2, Budget: 100 * time.Millisecond}
	rep, err := run(context.Background(), &stdout, &stderr, cfg)
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr.String())
	}
	if len(rep.Devices) != 3*2 {
		t.Fatalf("%d results, want 3 cases × 2 device counts:\n%s", len(rep.Devices), stdout.String())
	}
	for _, r := range rep.Devices {
		if r.Error != "" || r.MedianMS <= 0 || r.InputBytesPerDevice <= 0 || (r.Devices > 1) != (r.AllReduceBytes > 0) {
			t.Errorf("bad result %+v", r)
		}
	}
	if out := stdout.String(); !strings.Contains(out, "virtual") || !strings.Contains(out, "not what as many real") {
		t.Errorf("the table does not say the CPU devices are virtual:\n%s", out)
	}
}
