// Package graderenv names the environment of the two processes that grade an exercise: the
// judge (the grader with the original stub, which decides) and the worker (the grader with the
// student's code, in the sandbox, which computes). lessons/internal/grader reads these variables;
// internal/lessonrun sets them. It imports nothing, so that both can use it without one building
// the other's files.
package graderenv

const (
	// Role is "judge" or "worker"; unset, a grader runs in one process (a maintainer's go test).
	Role = "MHALAB_GRADER_ROLE"
	// Seed fixes the run's seed (replaying a run); otherwise the judge draws one.
	Seed = "MHALAB_GRADER_SEED"
	// SeedLine starts the line where the judge prints the run's seed.
	SeedLine = "mhalab-grader-seed: "
	// Backend names the exercises' backend: "go" (default) or "xla:cpu".
	Backend = "MHALAB_LESSONS_BACKEND"
)
