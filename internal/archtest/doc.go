// Package archtest holds the test that enforces the package arrows of ARCHITECTURE.md: which
// packages of the module may import which. It has no code of its own; run it with
// `go test ./internal/archtest/`.
package archtest
