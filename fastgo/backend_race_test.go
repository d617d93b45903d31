//go:build race

package fastgo_test

import "github.com/mhalab/mhalab/xla"

// testBackendConfig is the simplego configuration of the tests' backends under -race: ops run
// one at a time. GoMLX v0.26.0's parallel executor decides whether a node may overwrite an
// input by reading the input's use count without its lock (backends/simplego/exec.go, executeNode),
// which the race detector reports on every graph with two consumers of one value; fastgo's own
// parallel loops (parallelFor, the GEMM's row groups) still run on many goroutines and are checked.
const testBackendConfig = xla.SimpleGoConfig
