package hlo

import (
	"bytes"
	"strings"
	"testing"
)

// TestHLODevicesShowsOneAllReduce: head-parallel attention on 2 devices has one all-reduce of
// x's shape [2, 8, 32] float32 (2048 B) in the explicit program and in AutoSharding's, and the
// summary prints the computed bytes next to them.
func TestHLODevicesShowsOneAllReduce(t *testing.T) {
	b := xlaCPU(t)
	var out, summary bytes.Buffer
	cfg := Config{Batch: 2, Seq: 8, DModel: 32, Heads: 4, Causal: true}
	if err := HLODevices(&out, &summary, b, cfg, 2, Optimized, false); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(out.String(), " all-reduce("); n != 1 {
		t.Errorf("%d all-reduce in one device's optimised HLO, want 1", n)
	}
	s := summary.String()
	for _, want := range []string{"computed from shapes  all-reduce sum  [2 8 32]", "explicit SPMD (read)  all-reduce", "AutoSharding (read)   all-reduce", "2048"} {
		if !strings.Contains(s, want) {
			t.Errorf("summary lacks %q:\n%s", want, s)
		}
	}
	if err := HLODevices(&out, &summary, b, Config{Batch: 1, Seq: 4, DModel: 12, Heads: 3}, 2, Optimized, true); err == nil || !strings.Contains(err.Error(), "does not divide --heads 3") {
		t.Errorf("3 heads on 2 devices: error %v", err)
	}
}
