//go:build !unix

package fastgo

func processCPU() float64 { return 0 }
