package main

// BAD_INPUTS.md: the bad inputs of internal/badinputs and what mhalab answers (TestBadInputs).
//go:generate go run ./internal/badinputs/gen
