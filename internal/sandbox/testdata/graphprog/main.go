// Command graphprog runs a tiny GoMLX graph (sum of squares of [1 2 3] = 14) on the backend
// named by its argument ("go" or "xla:cpu"), for the sandbox's tests. It prints the peak
// address space and thread count it reached (from /proc/self/status), to size the defaults.
package main

import (
	"fmt"
	"os"
	"strings"

	"github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/mhalab/mhalab/xla"
)

func main() {
	b, err := xla.New(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, "graphprog:", err)
		os.Exit(1)
	}
	out, err := graph.ExecOnce(b, func(x *graph.Node) *graph.Node {
		return graph.ReduceAllSum(graph.Mul(x, x))
	}, []float32{1, 2, 3})
	if err != nil {
		fmt.Fprintln(os.Stderr, "graphprog:", err)
		os.Exit(1)
	}
	fmt.Println("RESULT", out.Value())
	if st, err := os.ReadFile("/proc/self/status"); err == nil {
		for _, l := range strings.Split(string(st), "\n") {
			if strings.HasPrefix(l, "VmPeak") || strings.HasPrefix(l, "VmHWM") || strings.HasPrefix(l, "Threads") {
				fmt.Println(strings.Join(strings.Fields(l), " "))
			}
		}
	} else {
		fmt.Println("status:", err)
	}
}
