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
		if r, err := resolvePath(d); err == nil {
			students = append(students, r)
		}
	}
	seen := map[string]string{}
	for _, o := range outputs {
		target, err := resolvePath(o.path)
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

// resolvePath returns the absolute path p stands for with every symbolic link resolved: of p
// itself when it exists, else of its folder (which must exist).
// A link to a file that does not exist yet stands for that file.
func resolvePath(p string) (string, error) { return resolveDepth(p, 0) }

func resolveDepth(p string, depth int) (string, error) {
	abs, err := filepath.Abs(p)
	if err != nil {
		return "", err
	}
	if st, err := os.Lstat(abs); err == nil {
		r, err := filepath.EvalSymlinks(abs)
		if err == nil {
			return r, nil
		}
		if st.Mode()&os.ModeSymlink == 0 || depth > 40 {
			return "", err
		}
		to, err := os.Readlink(abs)
		if err != nil {
			return "", err
		}
		if !filepath.IsAbs(to) {
			to = filepath.Join(filepath.Dir(abs), to)
		}
		return resolveDepth(to, depth+1)
	}
	dir, err := filepath.EvalSymlinks(filepath.Dir(abs))
	if err != nil {
		return "", fmt.Errorf("its folder %s does not exist", filepath.Dir(p))
	}
	return filepath.Join(dir, filepath.Base(abs)), nil
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
		if !slices.ContainsFunc(lessons.Exercises, func(e lessons.Exercise) bool { return e.Dir == col }) {
			return false
		}
	}
	return true
}

// writeReport writes data to path through a temporary file in the same folder and a rename,
// so that the file is either the previous one or the whole new one. When path is a symbolic
// link, the file it points at is replaced.
func writeReport(path string, data []byte) error {
	target, err := resolvePath(path)
	if err != nil {
		return fmt.Errorf("%s: %v", path, err)
	}
	f, err := os.CreateTemp(filepath.Dir(target), "."+filepath.Base(target)+".tmp-*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	_, err = f.Write(data)
	if err == nil {
		err = f.Chmod(0o644)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, target)
	}
	if err != nil {
		os.Remove(tmp)
		return err
	}
	return nil
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
