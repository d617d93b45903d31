package lessonrun

// A student's progress: lessons/.mhalab-progress.json, which the student may delete to start over.

import (
	"encoding/json"
	"fmt"
	"os"
	"time"

	"github.com/mhalab/mhalab/lessons"
)

// ProgressFile is the state a student can delete to start over.
const ProgressFile = ".mhalab-progress.json"

type progress struct {
	Version   int                      `json:"version"`
	Exercises map[string]progressEntry `json:"exercises"`
}

type progressEntry struct {
	Passed bool      `json:"passed"`
	Checks string    `json:"checks,omitempty"` // "4/6"
	Status string    `json:"status"`           // "pass", "fail", "does not compile", ...
	At     time.Time `json:"at"`
}

func (env *runner) progressPath() string { return env.inLessons(ProgressFile) }

// loadProgress reads the state file; a missing or unreadable one is a fresh start.
func (env *runner) loadProgress() progress {
	p := progress{Version: 1, Exercises: map[string]progressEntry{}}
	data, err := os.ReadFile(env.progressPath())
	if err != nil {
		return p
	}
	if err := json.Unmarshal(data, &p); err != nil || p.Exercises == nil {
		fmt.Fprintf(env.stderr, "mhalab lessons: %s is unreadable (%v): starting from an empty progress\n", env.progressPath(), err)
		return progress{Version: 1, Exercises: map[string]progressEntry{}}
	}
	return p
}

// record stores the result of one exercise in the state file.
func (env *runner) record(e lessons.Exercise, res *result) {
	p := env.loadProgress()
	p.Exercises[e.Dir] = progressEntry{Passed: res.passed(), Checks: res.checksSummary(), Status: res.status, At: time.Now().UTC().Truncate(time.Second)}
	data, _ := json.MarshalIndent(p, "", "  ")
	tmp := env.progressPath() + ".tmp"
	if err := os.WriteFile(tmp, append(data, '\n'), 0o644); err == nil {
		err = os.Rename(tmp, env.progressPath())
		if err == nil {
			return
		}
	}
	fmt.Fprintf(env.stderr, "mhalab lessons: could not save the progress in %s\n", env.progressPath())
}

// next is the first exercise not done, or false when all are.
func (env *runner) next() (lessons.Exercise, bool) {
	p := env.loadProgress()
	for _, e := range lessons.Exercises() {
		if !p.Exercises[e.Dir].Passed {
			return e, true
		}
	}
	return lessons.Exercise{}, false
}
