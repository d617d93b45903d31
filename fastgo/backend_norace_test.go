//go:build !race

package fastgo_test

// testBackendConfig is the simplego configuration of the tests' backends: GoMLX's default.
const testBackendConfig = ""
