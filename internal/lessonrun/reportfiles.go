package lessonrun

// The files grade writes (the CSV, results.json): checked before anything is graded, and written
// atomically.

import (
	"bytes"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/mhalab/mhalab/internal/atomicfile"

	"github.com/mhalab/mhalab/lessons"
)

// reportOutput is one file grade will write: the flag that named it, its path, and how to
// recognise a previous report of the same kind.
type reportOutput struct {
	flag     string
	path     string
	isReport func([]byte) bool
	kind     string // "a CSV of mhalab lessons grade"
}

// checkReportOutputs returns an error (one line naming the file) unless each output may be
// written: it does not resolve into a student folder (also through symbolic links), its folder
// exists, and it is absent or a previous report of the grader. No two outputs are the same file.
func checkReportOutputs(outputs []reportOutput, studentDirs []string) error {
	var students []string
	for _, d := range studentDirs {
		if r, err := atomicfile.Resolve(d); err == nil {
			students = append(students, r)
		}
	}
	seen := map[string]string{}
	for _, o := range outputs {
		target, err := atomicfile.Resolve(o.path)
		if err != nil {
			return fmt.Errorf("grade: %s %s: %v", o.flag, o.path, err)
		}
		for i, s := range students {
			if target == s || strings.HasPrefix(target, s+string(filepath.Separator)) {
				return fmt.Errorf("grade: %s %s is inside the student folder %s: the grader writes nothing into a student's copy", o.flag, o.path, studentDirs[i])
			}
		}
		if other, ok := seen[target]; ok {
			return fmt.Errorf("grade: %s %s is the same file as %s", o.flag, o.path, other)
		}
		seen[target] = o.flag + " " + o.path
		st, err := os.Stat(target)
		switch {
		case errors.Is(err, os.ErrNotExist):
			continue
		case err != nil:
			return fmt.Errorf("grade: %s %s: %v", o.flag, o.path, err)
		case st.IsDir():
			return fmt.Errorf("grade: %s %s is a folder: give a file name", o.flag, o.path)
		case !st.Mode().IsRegular():
			return fmt.Errorf("grade: %s %s is not a regular file: refusing to overwrite it", o.flag, o.path)
		}
		data, err := readHead(target, 1<<20)
		if err != nil {
			return fmt.Errorf("grade: %s %s: %v", o.flag, o.path, err)
		}
		if !o.isReport(data) {
			return fmt.Errorf("grade: %s %s exists and is not %s: refusing to overwrite it (remove it or choose another name)", o.flag, o.path, o.kind)
		}
	}
	return nil
}

// readHead reads at most n bytes of the file at path.
func readHead(path string, n int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, n))
}

// isGradeCSV reports whether data starts with the header row of gradeCSV: student, exercise
// folders, total, notes, failed checks.
func isGradeCSV(data []byte) bool {
	row, err := csv.NewReader(bytes.NewReader(data)).Read()
	if err != nil || len(row) < 4 || row[0] != "student" {
		return false
	}
	n := len(row)
	if row[n-3] != "total" || row[n-2] != "notes" || row[n-1] != "failed checks" {
		return false
	}
	for _, col := range row[1 : n-3] {
		if !slices.ContainsFunc(lessons.Exercises(), func(e lessons.Exercise) bool { return e.Dir == col }) {
			return false
		}
	}
	return true
}

// gradescopeOutput is grade's --gradescope: the results.json of the one submission graded.
type gradescopeOutput struct {
	path    string // "" = none
	scoring string
}

// outputs lists the files grade writes: the CSV and, with --gradescope, results.json.
func (gs gradescopeOutput) outputs(csvPath string) []reportOutput {
	out := []reportOutput{{flag: "-o", path: csvPath, isReport: isGradeCSV, kind: "a CSV of mhalab lessons grade"}}
	if gs.path != "" {
		out = append(out, reportOutput{flag: "--gradescope", path: gs.path, isReport: isGradescopeReport, kind: "a results.json of mhalab lessons grade"})
	}
	return out
}
