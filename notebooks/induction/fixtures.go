package induction

import (
	"fmt"
	"path/filepath"
	"slices"

	"github.com/gomlx/gomlx/backends"
)

// The committed files the notebooks read (testdata/), which `make induction-fixtures` rewrites
// (go run ./notebooks/induction/fixtures, WriteFixtures on xla:cpu).
const (
	RepeatFile           = "repeat.safetensors"     // notebook 07: Repeat after RepeatSteps steps
	InductionWeightsFile = "induction.safetensors"  // notebook 11: Induction after InductionSteps steps
	InductionRecordsFile = "induction-records.json" // notebook 11: its records, thinned to the milestones
	RepeatSteps          = 400                      // how long Repeat trains for its committed weights
	recordEvery          = 25                       // Induction's records: every 25 steps
)

// Fixtures returns the committed runs by name, a fresh slice: "repeat" and "induction".
func Fixtures() []string { return slices.Clone(fixtures) }

var fixtures = []string{"repeat", "induction"}

// WriteFixtures trains the run named (one of Fixtures) from its seed on backend and writes its
// committed files into dir. It checks what the notebooks rely on first: Repeat copies (accuracy
// ≥ 0.99), Induction has both heads (scores ≥ 0.5). Call dotgrad.Install first.
func WriteFixtures(backend backends.Backend, dir, name string) (summary string, err error) {
	switch name {
	case "repeat":
		r, err := NewRun(backend, Repeat())
		if err != nil {
			return "", err
		}
		if _, err := r.Train(RepeatSteps); err != nil {
			return "", err
		}
		s, err := r.Snapshot()
		if err != nil {
			return "", err
		}
		if s.Accuracy < 0.99 {
			return "", fmt.Errorf("induction: after %d steps Repeat's accuracy is %.3f, want ≥ 0.99", RepeatSteps, s.Accuracy)
		}
		path := filepath.Join(dir, RepeatFile)
		return fmt.Sprintf("%s: accuracy %.3f, scores %.2f", path, s.Accuracy, s.Induction), Save(path, r.Ctx, r.Config)
	case "induction":
		r, err := NewRun(backend, Induction())
		if err != nil {
			return "", err
		}
		records, err := r.TrainRecorded(InductionSteps, recordEvery)
		if err != nil {
			return "", err
		}
		last := records[len(records)-1]
		if slices.Max(last.Induction[1]) < 0.5 || slices.Max(last.PrevToken[0]) < 0.5 {
			return "", fmt.Errorf("induction: no induction head formed: previous-token %.2f, induction %.2f", last.PrevToken, last.Induction)
		}
		keep := Milestones(records, 1)
		if err := SaveRecords(filepath.Join(dir, InductionRecordsFile), Thin(records, keep)); err != nil {
			return "", err
		}
		path := filepath.Join(dir, InductionWeightsFile)
		return fmt.Sprintf("%s and %s: maps at records %v; last: accuracy %.3f, previous-token %.2f, induction %.2f",
			path, InductionRecordsFile, keep, last.Accuracy, last.PrevToken, last.Induction), Save(path, r.Ctx, r.Config)
	}
	return "", fmt.Errorf("induction: no committed run %q (want one of %v)", name, fixtures)
}
