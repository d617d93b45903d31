// Package testenv decides, in one place, what a test does when something it needs is missing
// (a backend, a model, a browser, a sandbox): on a developer's machine it skips and says how to
// install the missing part; under CI, which installs everything, it fails.
//
//	if err != nil {
//		testenv.RequireOrSkip(t, fmt.Sprintf("all-MiniLM-L6-v2 not installed (scripts/setup.sh --only minilm): %v", err))
//	}
package testenv

import (
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"testing"
)

// CIValues returns the values of the CI environment variable that mean "these tests run under
// CI" (GitHub Actions sets CI=true; .ci/run sets it too), a fresh slice. scripts/test.sh and the
// Makefile accept the same ones (TestShellAndMakeAgree checks it).
func CIValues() []string { return slices.Clone(ciValues) }

var ciValues = []string{"true", "1", "yes"}

// InCI reports whether the tests run under CI: $CI is one of CIValues.
func InCI() bool { return slices.Contains(ciValues, os.Getenv("CI")) }

// RequireOrSkip stops the test because of reason (what is missing and how to install it): it
// fails under CI and skips elsewhere.
func RequireOrSkip(t testing.TB, reason string) {
	t.Helper()
	if InCI() {
		t.Fatalf("CI=%s requires it: %s", os.Getenv("CI"), reason)
		return // t.Fatalf does not return; a fake testing.TB's may
	}
	t.Skip(reason)
}

// Seed is the seed of a randomised test: fixed by default (def), so that make test runs the same
// cases every time; $MHALAB_TEST_SEED=N uses N, and MHALAB_TEST_SEED=random draws one. The test
// logs the seed it uses, with the line that replays it.
func Seed(t testing.TB, def uint64) uint64 {
	t.Helper()
	seed := def
	switch v := os.Getenv("MHALAB_TEST_SEED"); v {
	case "":
	case "random":
		seed = rand.Uint64()
	default:
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			t.Fatalf("MHALAB_TEST_SEED=%q: want a number or random", v)
		}
		seed = n
	}
	t.Logf("seed %d (replay: MHALAB_TEST_SEED=%d go test -run '^%s$')", seed, seed, t.Name())
	return seed
}
