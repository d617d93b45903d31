package bench

import (
	"bytes"
	"strings"
	"testing"
)

// TestBusyWarning: a run whose load passed twice the CPUs (before, after, or at a case's end)
// says so at the top of the report and above the goals; a quiet run says nothing.
func TestBusyWarning(t *testing.T) {
	quiet := &benchReport{Machine: machineInfo{CPUs: 2, LoadBefore: "0.20 0.50 1.00", LoadAfter: "2.20 1.90 1.50"},
		MHA: []mhaResult{{Load: "3.90 2.00 1.00"}}}
	if w := busyWarning(quiet); w != "" {
		t.Errorf("quiet run (peak 3.9 on 2 CPUs): warning %q", w)
	}
	busy := &benchReport{Machine: machineInfo{CPUs: 2, LoadBefore: "1.00 1.00 1.00", LoadAfter: "?"},
		MHA: []mhaResult{{Load: "17.64 14.68 11.05"}}, Goals: []goalResult{{Goal: "g", Measured: "m"}}}
	busy.Machine.Busy = busyWarning(busy)
	if !strings.Contains(busy.Machine.Busy, "up to 17.6 on 2 CPUs") {
		t.Fatalf("busy run: warning %q", busy.Machine.Busy)
	}
	var out bytes.Buffer
	printReport(&out, busy)
	for _, want := range []string{"Warning: the machine was busy (1-minute load average up to 17.6 on 2 CPUs)", "Measured on a busy machine"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, out.String())
		}
	}
}
