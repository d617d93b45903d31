// Command plugincheck checks that a backend is usable: it creates it with xla.NewWithReason
// and runs a tiny graph on it. scripts/setup.sh runs it after installing the XLA CPU plugin.
//
//	go run ./internal/plugincheck [spec]   # spec defaults to "xla:cpu"
//
// It exits 0 and prints "plugincheck: ok: <reason>" when the backend computes 1²+2²+3² = 14,
// and exits 1 with the error otherwise. A plugin that crashes the process also exits non-zero.
package main

import (
	"fmt"
	"os"

	"github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/mhalab/mhalab/xla"
)

func main() {
	spec := xla.SpecCPU
	if len(os.Args) > 2 {
		fmt.Fprintln(os.Stderr, "usage: plugincheck [spec]")
		os.Exit(2)
	}
	if len(os.Args) == 2 {
		spec = os.Args[1]
	}
	reason, err := check(spec)
	if err != nil {
		fmt.Fprintf(os.Stderr, "plugincheck: %s: %v\n", spec, err)
		os.Exit(1)
	}
	fmt.Printf("plugincheck: ok: %s\n", reason)
}

// check creates the backend and runs sum(x*x) on it, x = [1 2 3].
func check(spec string) (reason string, err error) {
	backend, reason, err := xla.NewWithReason(spec)
	if err != nil {
		return "", err
	}
	defer backend.Finalize()
	out, err := graph.ExecOnce(backend, func(x *graph.Node) *graph.Node {
		return graph.ReduceAllSum(graph.Mul(x, x))
	}, []float32{1, 2, 3})
	if err != nil {
		return "", err
	}
	if got, ok := out.Value().(float32); !ok || got != 14 {
		return "", fmt.Errorf("sum of squares of [1 2 3] = %v, want 14", out.Value())
	}
	return reason, nil
}
