package xla_test

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"

	. "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/tensors"
	"github.com/mhalab/mhalab/internal/testenv"
	"github.com/mhalab/mhalab/xla"
)

// mallocChild is the value of childEnv that makes the test binary run runMallocChild.
const mallocChild = "malloc-faults"

// tempPages is the size in 4 KiB pages of the temporary block of runMallocChild's graph:
// one [4096, 2560] float32 product, 40 MiB, above glibc's automatic 32 MiB mmap threshold.
const tempPages = 4096 * 2560 * 4 / 4096

// mallocRuns is how many executions runMallocChild times (after one untimed).
const mallocRuns = 15

// runMallocChild creates the xla:cpu backend, runs a graph with a 40 MiB temporary
// 1+mallocRuns times and prints the minor page faults of each run after the first.
func runMallocChild() int { return runFaultsChild(2560) }

// runFaultsChild runs runMallocChild's graph with [4096, cols] float32 temporaries
// (cols·16 KiB each).
func runFaultsChild(cols int) int {
	b, err := xla.New(xla.SpecCPU)
	if err != nil {
		fmt.Println("error:", err)
		return 1
	}
	exec := MustNewExec(b, func(x, w *Node) *Node {
		y := Dot(x, w)                         // [4096, 64]·[64, cols] → [4096, cols] (temporary)
		return Dot(Exp(y), Transpose(w, 0, 1)) // [4096, cols]·[cols, 64] → [4096, 64]
	})
	x := tensors.FromFlatDataAndDimensions(make([]float32, 4096*64), 4096, 64)
	w := tensors.FromFlatDataAndDimensions(make([]float32, 64*cols), 64, cols)
	fmt.Print("faults:")
	for run := range 1 + mallocRuns {
		before := minorFaults()
		out := exec.MustExec(x, w)
		faults := minorFaults() - before
		for _, o := range out {
			o.MustFinalizeAll()
		}
		if run > 0 {
			fmt.Print(" ", faults)
		}
	}
	fmt.Println()
	return 0
}

func minorFaults() int64 {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return ru.Minflt
}

// mallocFaults runs runMallocChild in a fresh process with the given malloc environment
// (XLA's and glibc's settings are read once per process) and returns the median and the least
// count of page faults of its runs.
func mallocFaults(t *testing.T, env ...string) (median, least int64) {
	t.Helper()
	median, least, _ = childFaults(t, mallocChild, env...)
	return median, least
}

// childFaults runs the test binary as the child mode (a value of childEnv) with the given
// environment (minus the user's malloc and XLA settings) and returns the median and least page
// faults of the executions it printed, and its whole output.
func childFaults(t *testing.T, mode string, env ...string) (median, least int64, text string) {
	t.Helper()
	cmd := exec.Command(os.Args[0])
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "MALLOC_") && !strings.HasPrefix(kv, "GLIBC_TUNABLES=") && !strings.HasPrefix(kv, "XLA_FLAGS=") && !strings.HasPrefix(kv, "MHALAB_HUGEPAGES") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(append(cmd.Env, childEnv+"="+mode), env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child failed: %v\n%s", err, out)
	}
	text = string(out)
	i := strings.LastIndex(text, "faults:")
	if i < 0 {
		t.Fatalf("child output lacks the fault counts:\n%s", text)
	}
	var counts []int64
	for _, f := range strings.Fields(text[i+len("faults:"):]) {
		n, err := strconv.ParseInt(f, 10, 64)
		if err != nil {
			t.Fatalf("child output %q: %v", text, err)
		}
		counts = append(counts, n)
	}
	if len(counts) != mallocRuns {
		t.Fatalf("child printed %d fault counts, want %d:\n%s", len(counts), mallocRuns, text)
	}
	t.Logf("%v: minor page faults per execution %v", env, counts)
	slices.Sort(counts)
	return counts[len(counts)/2], counts[0], text
}

// TestXLAKeepsTemporariesMapped: on xla:cpu a graph's 40 MiB temporary block is reused from
// malloc's heap between executions instead of being mapped and faulted in again each time
// (without tuneMalloc: ≥ 13,000 faults in every execution; with it, some executions fault a
// few pages and others still ~10,000 — which ones varies from run to run, so the test checks the
// least count), while a user's $MALLOC_MMAP_THRESHOLD_ still wins.
func TestXLAKeepsTemporariesMapped(t *testing.T) {
	if _, err := xla.FindPlugin("cpu"); err != nil {
		testenv.RequireOrSkip(t, "XLA CPU plugin: "+err.Error())
	}
	if runtime.GOOS != "linux" {
		t.Skip("glibc's malloc thresholds: Linux only")
	}
	if _, least := mallocFaults(t); least > tempPages/4 {
		t.Errorf("xla:cpu executions with a %d-page temporary: %d minor page faults at least, want ≤ %d (malloc maps the block afresh each time)", tempPages, least, tempPages/4)
	}
	if _, least := mallocFaults(t, "MALLOC_MMAP_THRESHOLD_=131072"); least < tempPages {
		t.Errorf("with the user's MALLOC_MMAP_THRESHOLD_=131072: %d minor page faults at least, want ≥ %d (the user's threshold was overridden)", least, tempPages)
	}
}
