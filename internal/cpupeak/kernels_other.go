//go:build !amd64

package cpupeak

// kernels: only amd64 has FMA kernels here.
func kernels() []kernel { return nil }

// bestKernel: none outside amd64.
func bestKernel() (kernel, bool) { return kernel{}, false }
