package xla_test

import (
	"fmt"

	"github.com/mhalab/mhalab/xla"
)

// New returns the backend a spec names (NewWithReason also says why that one). GoMLX calls the
// pure-Go backend "SimpleGo (go)".
func ExampleNew() {
	backend, err := xla.New("go")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(backend.Name())
	// Output: SimpleGo (go)
}

// An unknown spec is an error listing the valid ones.
func ExampleCheckSpec() {
	fmt.Println(xla.CheckSpec("tpu"))
	// Output: xla: unknown backend "tpu": valid backends are ["go" "xla:cpu" "xla:cuda"] (or empty for the default)
}

func ExamplePluginFile() {
	fmt.Println(xla.PluginFile("cpu"))
	// Output: pjrt_c_api_cpu_plugin.so
}

// Available reports every backend; the pure-Go one is always there.
func ExampleAvailable() {
	go1 := xla.Available()[0]
	fmt.Println(go1.Name, go1.Available, go1.Devices)
	// Output: go true 1
}

// A program that runs large graphs on xla:cpu starts itself again with huge pages for XLA's
// temporaries, first thing in main (it returns at once when that is not needed or not possible,
// and in the program it started).
func ExampleExecWithHugePages() {
	if err := xla.ExecWithHugePages(); err != nil {
		fmt.Println("running without huge pages:", err)
	}
	// … the program: xla.New(xla.SpecCPU), graphs, …
}
