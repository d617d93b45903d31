//go:build !unix

package main

import "os/exec"

// setProcessGroup: without process groups, cancellation kills go test only (its default).
func setProcessGroup(cmd *exec.Cmd) {}
