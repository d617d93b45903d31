// Package backendtest runs a test on every GoMLX backend mhalab supports here:
// the pure-Go backend ("go") always, and XLA CPU ("xla:cpu") when its PJRT plugin loads.
//
// Under CI (CI=true) a missing XLA CPU plugin is a failure, not a skip: CI installs it
// with scripts/setup.sh, so its absence there means the setup is broken.
//
// MHALAB_TEST_BACKENDS (comma-separated, e.g. "go") restricts the list.
package backendtest

import (
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/gomlx/gomlx/backends"
	"github.com/mhalab/mhalab/internal/testenv"
	"github.com/mhalab/mhalab/xla"
)

// names of the backends tested, in order: "go", "xla:cpu", and "xla:cuda" when
// MHALAB_TEST_BACKENDS names it (scripts/gpu-check.sh does, on a GPU machine).
var names = withRequestedCUDA([]string{"go", "xla:cpu"})

func withRequestedCUDA(names []string) []string {
	for _, w := range strings.Split(os.Getenv("MHALAB_TEST_BACKENDS"), ",") {
		if strings.TrimSpace(w) == "xla:cuda" {
			return append(names, "xla:cuda")
		}
	}
	return names
}

var (
	mu      sync.Mutex
	cache   = map[string]backends.Backend{}
	errs    = map[string]error{}
	printed bool
)

func init() {
	// Never let GoMLX try to download a PJRT plugin from GitHub (unreachable here); package
	// xla disables it in this process, the variable does so in subprocesses.
	_ = os.Setenv("GOMLX_NO_AUTO_INSTALL", "1")
}

func wanted(name string) bool {
	list := os.Getenv("MHALAB_TEST_BACKENDS")
	if list == "" {
		return true
	}
	for _, w := range strings.Split(list, ",") {
		if strings.TrimSpace(w) == name {
			return true
		}
	}
	return false
}

// Get returns the backend for name, creating it once per test binary.
func Get(name string) (backends.Backend, error) {
	mu.Lock()
	defer mu.Unlock()
	if b, ok := cache[name]; ok {
		return b, nil
	}
	if err, ok := errs[name]; ok {
		return nil, err
	}
	b, err := newBackend(name)
	if err != nil {
		errs[name] = err
		return nil, err
	}
	cache[name] = b
	return b, nil
}

// newBackend creates a backend with xla.NewWithReason, which finds and checks the PJRT
// plugin itself (a broken plugin file is an error, not a crash) and never downloads one.
func newBackend(name string) (backends.Backend, error) {
	b, _, err := xla.NewWithReason(name)
	return b, err
}

// Available returns the backends this test binary will run on, and for each
// missing one the reason.
func Available() (avail []string, missing map[string]error) {
	missing = map[string]error{}
	for _, n := range names {
		if !wanted(n) {
			continue
		}
		if _, err := Get(n); err != nil {
			missing[n] = err
			continue
		}
		avail = append(avail, n)
	}
	return avail, missing
}

// Main is meant for TestMain: it prints which backends the package's tests run on
// (so the CI log shows it), then runs the tests.
//
//	func TestMain(m *testing.M) { backendtest.Main(m, "mhalib") }
func Main(m *testing.M, pkg string) {
	names, missing := Available()
	fmt.Printf("=== %s: tests run on backends %v\n", pkg, names)
	for n, err := range missing {
		fmt.Printf("=== %s: backend %s unavailable: %v\n", pkg, n, err)
	}
	os.Exit(m.Run())
}

// Run runs fn as a subtest per backend, named after the backend.
// A missing XLA backend skips (with the reason) outside CI and fails in CI.
func Run(t *testing.T, fn func(t *testing.T, backend backends.Backend)) {
	t.Helper()
	for _, n := range names {
		if !wanted(n) {
			continue
		}
		t.Run(n, func(t *testing.T) {
			b, err := Get(n)
			if err != nil {
				if n == "go" {
					t.Skipf("backend %s unavailable: %v", n, err)
				}
				testenv.RequireOrSkip(t, fmt.Sprintf("backend %s unavailable: %v", n, err))
			}
			fn(t, b)
		})
	}
}
