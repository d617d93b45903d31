//go:build !unix

package main

import "os/exec"

// lessonsProcessGroup: without process groups, cancellation kills go test only (its default).
func lessonsProcessGroup(cmd *exec.Cmd) {}
