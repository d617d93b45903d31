package bench

import (
	"bytes"
	"strings"
	"testing"
)

// TestMachineChange checks that --compare says when the two runs were made on CPUs that run
// other kernels (an AVX-512 machine then, an AVX2 one now), and says nothing when they match.
func TestMachineChange(t *testing.T) {
	avx512 := machineInfo{CPUs: 2, CPUModel: "AMD EPYC", FastGo: "fastgo on: float32 avx512-4x32; element-wise ops (21) avx512"}
	avx2 := machineInfo{CPUs: 2, CPUModel: "AMD EPYC", FastGo: "fastgo on: float32 avx2-4x16; element-wise ops (21) avx2"}
	old := &benchReport{Started: "then", Machine: avx512, Torch: []torchInfo{{Version: "2.15.0", CPUCapability: "AVX512"}}}
	cur := &benchReport{Started: "now", Machine: avx2, Torch: []torchInfo{{Version: "2.15.0", CPUCapability: "AVX2"}}}
	var out bytes.Buffer
	printMachineChange(&out, old, cur)
	for _, want := range []string{
		"Warning: the runs were made on different machines",
		"fastgo then “fastgo on: float32 avx512-4x32; element-wise ops (21) avx512”, now “fastgo on: float32 avx2-4x16; element-wise ops (21) avx2”",
		"PyTorch's CPU capability then AVX512, now AVX2",
		"compare the ratios to PyTorch",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("warning lacks %q:\n%s", want, out.String())
		}
	}
	if strings.Count(out.String(), "\n") != 2 { // a blank line, then one line
		t.Errorf("want one line after a blank one, got %q", out.String())
	}
	out.Reset()
	printMachineChange(&out, cur, cur)
	if out.Len() != 0 {
		t.Errorf("same machine: want no warning, got %q", out.String())
	}
	// Another count of fastgo's element-wise ops (a new op, the same kernels) is the same machine.
	out.Reset()
	more := *cur
	more.Machine.FastGo = strings.Replace(more.Machine.FastGo, "(21)", "(22)", 1)
	printMachineChange(&out, cur, &more)
	if out.Len() != 0 {
		t.Errorf("fastgo with one op more: want no warning, got %q", out.String())
	}
	// Older reports have no fastgo field: nothing is known to differ.
	out.Reset()
	printMachineChange(&out, &benchReport{Machine: machineInfo{CPUs: 2, CPUModel: "AMD EPYC"}}, cur)
	if out.Len() != 0 {
		t.Errorf("unknown kernels then: want no warning, got %q", out.String())
	}
	// Another CPU count or model is a different machine too.
	out.Reset()
	other := *cur
	other.Machine.CPUs, other.Machine.CPUModel = 4, "Intel Xeon"
	printMachineChange(&out, cur, &other)
	if !strings.Contains(out.String(), "CPUs then 2 (AMD EPYC), now 4 (Intel Xeon)") {
		t.Errorf("CPU change not named:\n%s", out.String())
	}
}
