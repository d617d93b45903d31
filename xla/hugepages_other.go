//go:build !unix

package xla

// execSelf does nothing where there is no execve (hugePagesWanted is false there anyway).
func execSelf([]string) error { return nil }
