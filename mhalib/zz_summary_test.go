package mhalib_test

import (
	"fmt"
	"slices"
	"testing"
)

// TestZZSummary runs last (file and test order) and prints the largest error vs the float64
// reference seen in this run (float64 graphs, outputs and weights), per backend, for the CI log.
func TestZZSummary(t *testing.T) {
	var names []string
	for n := range maxErr {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		fmt.Printf("=== mhalib: largest |error| vs float64 reference on %s: %.3g\n", n, maxErr[n])
	}
}
