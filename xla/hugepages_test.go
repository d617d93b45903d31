package xla_test

import (
	"fmt"
	"os"
	"runtime"
	"strings"
	"testing"

	"github.com/mhalab/mhalab/internal/testenv"
	"github.com/mhalab/mhalab/xla"
)

// hugePagesChild is the value of childEnv that makes the test binary run runHugePagesChild.
const hugePagesChild = "hugepages-faults"

// bigTempCols makes runFaultsChild's temporaries [4096, 5120] float32, 80 MiB each: above the
// 64 MiB that glibc's per-thread arenas hold, so malloc maps them afresh in every execution.
const bigTempCols = 5120

// bigTempPages is the size of one such temporary in 4 KiB pages.
const bigTempPages = 4096 * bigTempCols * 4 / 4096

// runHugePagesChild calls ExecWithHugePages first, as a program's main does, prints the
// $GLIBC_TUNABLES it then runs with and the page faults of runFaultsChild's executions.
func runHugePagesChild() int {
	if err := xla.ExecWithHugePages(); err != nil {
		fmt.Println("exec error:", err)
	}
	fmt.Printf("tunables: %q\n", os.Getenv("GLIBC_TUNABLES"))
	return runFaultsChild(bigTempCols)
}

// TestExecWithHugePagesFaultsFewerPages: a program that calls ExecWithHugePages runs again with
// glibc.malloc.hugetlb=1, and its xla:cpu executions with 80 MiB temporaries fault in a small
// part of the pages that the same program faults in without it ($MHALAB_HUGEPAGES=0: every page,
// every execution).
func TestExecWithHugePagesFaultsFewerPages(t *testing.T) {
	if _, err := xla.FindPlugin("cpu"); err != nil {
		testenv.RequireOrSkip(t, "XLA CPU plugin: "+err.Error())
	}
	if runtime.GOOS != "linux" {
		t.Skip("glibc's tunables: Linux only")
	}
	if mode := xla.ReadTHPMode(); mode != "madvise" {
		t.Skipf("the kernel's transparent huge pages are %q, not \"madvise\": ExecWithHugePages does nothing", mode)
	}
	if v := xla.GlibcVersion(); !xla.GlibcAtLeast(v, 2, 35) {
		t.Skipf("C library %q: glibc.malloc.hugetlb needs glibc 2.35", v)
	}
	_, least, text := childFaults(t, hugePagesChild, xla.HugePagesEnv+"=0")
	if !strings.Contains(text, `tunables: ""`) {
		t.Errorf("with %s=0 the child ran with tunables set:\n%s", xla.HugePagesEnv, text)
	}
	if least < bigTempPages {
		t.Errorf("without huge pages: %d minor page faults at least per execution, want ≥ %d (the %d-page temporary is no longer mapped afresh: this test no longer shows what ExecWithHugePages is for)", least, bigTempPages, bigTempPages)
	}
	median, _, text := childFaults(t, hugePagesChild, "GLIBC_TUNABLES=glibc.malloc.arena_max=8")
	if !strings.Contains(text, `tunables: "glibc.malloc.arena_max=8:glibc.malloc.hugetlb=1"`) {
		t.Errorf("the child did not run again with glibc.malloc.hugetlb=1 added to the user's tunables:\n%s", text)
	}
	if median > bigTempPages/4 {
		t.Errorf("with huge pages: %d minor page faults per execution (median), want ≤ %d", median, bigTempPages/4)
	}
}
