package lessonrun

// mhalab lessons grade --gradescope FILE: one submission's results in the format of Gradescope's
// autograders (https://gradescope-autograders.readthedocs.io/en/latest/specs/): results.json.
//
// One test per check of each exercise (a subtest of the grader's TestLesson), numbered
// "<exercise>.<check>" ("5.2"), with the check's messages as output. Scoring (ScoringExercise or
// ScoringChecks, --scoring) gives every exercise 1 point:
//
//   - exercise (the default): all or nothing, as `mhalab lessons check` and the CSV count it. The
//     point is on one test per exercise, numbered "5"; the check tests are worth 0 and are there
//     for their status (passed/failed) and their messages.
//   - checks: partial credit. The point is split equally over the checks when the grader ran to
//     its end (every check passed or failed).
//
// In both, an exercise that did not run to its end (does not compile, refused, crashed, time
// limit, missing, …) scores 0 on one test numbered "5" whose output says why, followed by the
// checks that did run (worth 0). So the maximum is always the number of exercises graded.

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/mhalab/mhalab/internal/atomicfile"

	"github.com/mhalab/mhalab/lessons"
)

// Scoring rules of --scoring.
const (
	ScoringExercise = "exercise" // 1 point per exercise, all checks passing
	ScoringChecks   = "checks"   // 1 point per exercise, split over its checks
)

// gradescopeMarker is the value of extra_data.generator in every results.json the grader
// writes (Gradescope stores extra_data and shows nothing of it): a file with it is a previous
// report, which --gradescope may overwrite.
const gradescopeMarker = "mhalab lessons grade"

// gsResults is results.json.
type gsResults struct {
	Score            float64           `json:"score"`
	ExecutionTime    int               `json:"execution_time"`
	Output           string            `json:"output"`
	Visibility       string            `json:"visibility"`
	StdoutVisibility string            `json:"stdout_visibility"`
	Tests            []gsTest          `json:"tests"`
	ExtraData        map[string]string `json:"extra_data"`
}

// gsTest is one entry of results.json's tests.
type gsTest struct {
	Name       string   `json:"name"`
	Number     string   `json:"number"`
	Score      float64  `json:"score"`
	MaxScore   float64  `json:"max_score"`
	Status     string   `json:"status"` // "passed" or "failed"
	Output     string   `json:"output"`
	Visibility string   `json:"visibility"`
	Tags       []string `json:"tags,omitempty"`
}

// checkScoring returns an error unless s is a scoring rule ("" is the default).
func checkScoring(s string) error {
	switch s {
	case "", ScoringExercise, ScoringChecks:
		return nil
	}
	return usagef("--scoring %q: want %s (1 point per exercise whose checks all pass) or %s (the point split over the checks)", s, ScoringExercise, ScoringChecks)
}

// gradescopeResults turns one student's grade into results.json.
func gradescopeResults(g *studentGrade, scoring string, elapsed time.Duration) *gsResults {
	if scoring == "" {
		scoring = ScoringExercise
	}
	out := &gsResults{
		ExecutionTime:    int(math.Round(elapsed.Seconds())),
		Visibility:       "visible",
		StdoutVisibility: "hidden",
		Tests:            []gsTest{},
		ExtraData:        map[string]string{"generator": gradescopeMarker, "scoring": scoring},
	}
	var marks []string
	total := 0.0
	for _, r := range g.results {
		e := r.exercise
		tags := []string{e.Dir}
		status := func(ok bool) string {
			if ok {
				return "passed"
			}
			return "failed"
		}
		ranToEnd := (r.status == "pass" || r.status == "fail") && len(r.checks) > 0
		exerciseTest := scoring == ScoringExercise || !ranToEnd
		score := 0.0
		if exerciseTest {
			if r.passed() {
				score = 1
			}
			out.Tests = append(out.Tests, gsTest{
				Name:       fmt.Sprintf("%s: %s", e.Dir, e.Title),
				Number:     fmt.Sprint(e.Number),
				Score:      score,
				MaxScore:   1,
				Status:     status(r.passed()),
				Output:     exerciseOutput(r),
				Visibility: "visible",
				Tags:       tags,
			})
		}
		share := 0.0
		if !exerciseTest {
			share = 1 / float64(len(r.checks))
		}
		for i, c := range r.checks {
			t := gsTest{
				Name:       fmt.Sprintf("%s: %s", e.Dir, c.name),
				Number:     fmt.Sprintf("%d.%d", e.Number, i+1),
				MaxScore:   share,
				Status:     status(c.passed),
				Output:     checkOutput(e, c),
				Visibility: "visible",
				Tags:       tags,
			}
			if c.passed {
				t.Score = share
				score += share
			}
			out.Tests = append(out.Tests, t)
		}
		total += score
		mark := "✗ " + r.status
		if r.passed() {
			mark = "✓"
		} else if summary := r.checksSummary(); summary != "" {
			mark += ", " + summary + " checks pass"
		}
		marks = append(marks, fmt.Sprintf("  %s %s", e.Dir, mark))
	}
	out.Score = math.Round(total*1e4) / 1e4
	var b strings.Builder
	fmt.Fprintf(&b, "%d/%d exercises pass (score %g/%d, scoring: %s).\n", g.total(), len(g.results), out.Score, len(g.results), scoringLine(scoring))
	b.WriteString(strings.Join(marks, "\n"))
	b.WriteString("\n")
	if len(g.notes) > 0 {
		b.WriteString("\nNotes:\n")
		for _, n := range g.notes {
			fmt.Fprintf(&b, "  - %s\n", n)
		}
	}
	out.Output = b.String()
	return out
}

func scoringLine(scoring string) string {
	if scoring == ScoringChecks {
		return "1 point per exercise, split over its checks"
	}
	return "1 point per exercise whose checks all pass"
}

// exerciseOutput says how an exercise went: why it failed, with what the compiler, the refusal
// or the crash said.
func exerciseOutput(r *result) string {
	e := r.exercise
	if r.passed() {
		return fmt.Sprintf("All %d checks pass.", len(r.checks))
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %s\n", r.status, r.reason)
	section := func(title string, lines []string, max int) {
		if len(lines) == 0 {
			return
		}
		fmt.Fprintf(&b, "\n%s\n", title)
		for i, l := range lines {
			if i == max {
				fmt.Fprintf(&b, "  … (%d more lines)\n", len(lines)-max)
				break
			}
			fmt.Fprintf(&b, "  %s\n", l)
		}
	}
	section("Compiler:", r.build, 20)
	section("Refused:", r.refused, 20)
	if r.status == "crashed" || r.status == "time limit" || (r.status == "fail" && len(r.checks) == 0) {
		section("Output:", r.output, 40)
	}
	section("Notes:", r.notes, 20)
	if len(r.checks) > 0 {
		fmt.Fprintf(&b, "\n%s checks pass (each check is a test below).\n", r.checksSummary())
	}
	fmt.Fprintf(&b, "\n%s", hintPointer(e))
	return b.String()
}

// checkOutput is what a check reported (expected and received shapes, the first element that
// differs, its hint), or that it passed.
func checkOutput(e lessons.Exercise, c *checkResult) string {
	msg := strings.TrimRight(strings.Join(c.lines, "\n"), "\n")
	if c.passed {
		if msg == "" {
			return "passed"
		}
		return "passed\n" + msg
	}
	if msg == "" {
		msg = "failed"
	}
	return msg + "\n\n" + hintPointer(e)
}

func hintPointer(e lessons.Exercise) string {
	return fmt.Sprintf("Stuck? Read lessons/%s (or run `mhalab lessons hint %d`).", e.Path("hint.md"), e.Number)
}

// writeGradescope writes g's results.json to path (atomically).
func writeGradescope(path string, g *studentGrade, scoring string, elapsed time.Duration) error {
	data, err := json.MarshalIndent(gradescopeResults(g, scoring, elapsed), "", "  ")
	if err != nil {
		return err
	}
	if err := atomicfile.WriteFile(path, append(data, '\n')); err != nil {
		return fmt.Errorf("writing the Gradescope results: %w", err)
	}
	return nil
}

// isGradescopeReport reports whether data is a results.json this grader wrote.
func isGradescopeReport(data []byte) bool {
	var r struct {
		ExtraData map[string]any `json:"extra_data"`
	}
	return json.Unmarshal(data, &r) == nil && r.ExtraData["generator"] == gradescopeMarker
}
