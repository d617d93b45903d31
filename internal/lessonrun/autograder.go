package lessonrun

// mhalab lessons gradescope: the autograder zip for Gradescope
// (https://gradescope-autograders.readthedocs.io/en/latest/specs/).
//
// Gradescope unpacks the zip into /autograder/source, runs setup.sh once when it builds the
// image (Ubuntu, root, network), then run_autograder for every submission (the student's files
// in /autograder/submission; results in /autograder/results/results.json). The zip holds:
//
//	setup.sh          installs the Go toolchain of go.mod, then runs prepare.sh
//	prepare.sh        (Go installed) fetches the modules the lessons import, compiles them once
//	run_autograder    puts the submission in place, runs mhalab lessons grade --gradescope
//	mhalab            this command for linux/amd64, built without the reference solutions
//	repo/             what the lessons need to compile: go.mod, go.sum, lessons/ (pristine
//	                  stubs, graders and fixtures; no solutions) and the packages of this module
//	                  they import (go list -deps -test -tags lessons ./lessons/...)
//	mhalab-autograder.json  what was built: exercises, scoring, Go version (and the marker that
//	                  lets a later run overwrite this zip)
//
// Every script takes its root from MHALAB_AUTOGRADER_ROOT (default /autograder), so that tests
// run them in a temporary folder.

import (
	"archive/zip"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"text/template"
	"time"

	"github.com/mhalab/mhalab/internal/atomicfile"

	"github.com/mhalab/mhalab/lessons"
)

// autograderMarker is mhalab-autograder.json's "generator".
const autograderMarker = "mhalab lessons gradescope"

// autograderInfo is mhalab-autograder.json, and what the scripts' templates need.
type autograderInfo struct {
	Generator string   `json:"generator"`
	Exercises []string `json:"exercises"` // folders, in order
	Numbers   string   `json:"numbers"`   // "1,3"
	Scoring   string   `json:"scoring"`
	GoVersion string   `json:"go_version"` // from go.mod: "1.26.0"

	Files map[string]string `json:"-"` // exercise folder → the file the student edits
	Keep  map[string]string `json:"-"` // exercise folder → grader and given files, space-separated
}

// gradescopeZip writes the autograder zip for the exercises to output.
func (env *runner) gradescopeZip(ctx context.Context, exercises []lessons.Exercise, scoring, output string) error {
	out := reportOutput{flag: "-o", path: output, isReport: isAutograderZip, kind: "an autograder zip of mhalab lessons gradescope"}
	if err := checkReportOutputs([]reportOutput{out}, nil); err != nil {
		return errors.New(strings.Replace(err.Error(), "grade: ", "gradescope: ", 1))
	}
	if runtime.GOOS != "linux" || runtime.GOARCH != "amd64" {
		return fmt.Errorf("gradescope: build the autograder on linux/amd64 (Gradescope's machines): the mhalab it carries is compiled with cgo, which does not cross-compile here (%s/%s)", runtime.GOOS, runtime.GOARCH)
	}
	if scoring == "" {
		scoring = ScoringExercise
	}
	goVersion, err := goModVersion(filepath.Join(env.root, "go.mod"))
	if err != nil {
		return err
	}
	info := autograderInfo{Generator: autograderMarker, Scoring: scoring, GoVersion: goVersion, Files: map[string]string{}, Keep: map[string]string{}}
	var numbers []string
	for _, e := range exercises {
		info.Exercises = append(info.Exercises, e.Dir)
		numbers = append(numbers, fmt.Sprint(e.Number))
		info.Files[e.Dir] = e.File
		info.Keep[e.Dir] = strings.Join(append([]string{e.Grader}, e.Given...), " ")
	}
	info.Numbers = strings.Join(numbers, ",")

	files, err := env.autograderSources()
	if err != nil {
		return err
	}
	fmt.Fprintf(env.stderr, "building mhalab for linux/amd64 without the reference solutions …\n")
	binary, err := env.buildGraderBinary(ctx)
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	built := time.Now()
	add := func(name string, data []byte, mode fs.FileMode) error {
		h := &zip.FileHeader{Name: name, Method: zip.Deflate, Modified: built}
		h.SetMode(mode)
		w, err := zw.CreateHeader(h)
		if err != nil {
			return err
		}
		_, err = w.Write(data)
		return err
	}
	for _, s := range []struct{ name, tmpl string }{{"setup.sh", setupScript}, {"prepare.sh", prepareScript}, {"run_autograder", runAutograderScript}} {
		var b bytes.Buffer
		if err := template.Must(template.New(s.name).Parse(s.tmpl)).Execute(&b, info); err != nil {
			return err
		}
		if err := add(s.name, b.Bytes(), 0o755); err != nil {
			return err
		}
	}
	meta, _ := json.MarshalIndent(info, "", "  ")
	if err := add("mhalab-autograder.json", append(meta, '\n'), 0o644); err != nil {
		return err
	}
	if err := add("mhalab", binary, 0o755); err != nil {
		return err
	}
	names := make([]string, 0, len(files))
	for name := range files {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		if err := add("repo/"+name, files[name], 0o644); err != nil {
			return err
		}
	}
	if err := zw.Close(); err != nil {
		return err
	}
	if err := atomicfile.WriteFile(output, buf.Bytes()); err != nil {
		return fmt.Errorf("gradescope: writing %s: %w", output, err)
	}
	fmt.Fprintf(env.stdout, "Autograder for exercises %s (scoring: %s) written to %s (%.1f MiB).\n", info.Numbers, scoringLine(scoring), output, float64(buf.Len())/(1<<20))
	fmt.Fprintf(env.stdout, "On Gradescope: a Programming Assignment, Configure Autograder → Zip file upload → %s (base image Ubuntu 22.04 or later).\n", filepath.Base(output))
	return nil
}

var goLine = regexp.MustCompile(`(?m)^(go|toolchain)\s+(go)?([0-9][0-9.]*)\s*$`)

// goModVersion returns the Go version go.mod asks for: its toolchain line, else its go line
// ("1.26" is release 1.26.0).
func goModVersion(path string) (string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	version := ""
	for _, m := range goLine.FindAllStringSubmatch(string(data), -1) {
		if m[1] == "toolchain" || version == "" {
			version = m[3]
		}
	}
	if version == "" {
		return "", fmt.Errorf("gradescope: no go line in %s", path)
	}
	if strings.Count(version, ".") == 1 {
		version += ".0"
	}
	return version, nil
}

// autograderSources returns the files of repo/ in the zip, by path relative to the repository:
// go.mod, go.sum, lessons/ without solutions (the files the manifest lists in their pristine
// version) and the non-test Go files of the module's packages that the lessons import.
func (env *runner) autograderSources() (map[string][]byte, error) {
	files := map[string][]byte{}
	for _, name := range []string{"go.mod", "go.sum"} {
		data, err := os.ReadFile(filepath.Join(env.root, name))
		if err != nil {
			return nil, fmt.Errorf("gradescope: %w", err)
		}
		files[name] = data
	}
	list := exec.Command(goBinary(), "list", "-deps", "-test", "-tags", "lessons", "-f", "{{if .Module}}{{if .Module.Main}}{{.Dir}}{{end}}{{end}}", "./lessons/...")
	list.Dir = env.root
	var stderr bytes.Buffer
	list.Stderr = &stderr
	out, err := list.Output()
	if err != nil {
		return nil, fmt.Errorf("gradescope: go list the lessons' packages: %v: %s", err, firstLines(stderr.String(), 2))
	}
	lessonsDir := filepath.Join(env.root, "lessons")
	for _, dir := range strings.Fields(string(out)) {
		if dir == lessonsDir || strings.HasPrefix(dir, lessonsDir+string(filepath.Separator)) {
			continue
		}
		entries, err := os.ReadDir(dir)
		if err != nil {
			return nil, fmt.Errorf("gradescope: %w", err)
		}
		for _, entry := range entries {
			name := entry.Name()
			if entry.Type().IsRegular() && (strings.HasSuffix(name, ".go") || strings.HasSuffix(name, ".s")) && !strings.HasSuffix(name, "_test.go") {
				data, err := os.ReadFile(filepath.Join(dir, name))
				if err != nil {
					return nil, fmt.Errorf("gradescope: %w", err)
				}
				rel, _ := filepath.Rel(env.root, filepath.Join(dir, name))
				files[filepath.ToSlash(rel)] = data
			}
		}
	}
	err = filepath.WalkDir(lessonsDir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		rel, _ := filepath.Rel(lessonsDir, p)
		rel = filepath.ToSlash(rel)
		switch {
		case p == lessonsDir:
			return nil
		case d.IsDir() && rel == "solutions/files":
			// Only its README: package solutions embeds the folder, which must not be empty.
			data, err := os.ReadFile(filepath.Join(p, "README.md"))
			if err != nil {
				return err
			}
			files["lessons/solutions/files/README.md"] = data
			return filepath.SkipDir
		case strings.HasPrefix(name, "."):
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		case d.IsDir(), !d.Type().IsRegular(), strings.HasSuffix(name, "_solution.go"), strings.HasSuffix(name, ".test"):
			return nil
		}
		data, err := os.ReadFile(p)
		if _, inManifest := lessons.ManifestHash(rel); inManifest {
			data, err = env.original(rel) // the stubs and graders as published, not the teacher's edits
		}
		if err != nil {
			return err
		}
		files["lessons/"+rel] = data
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("gradescope: %w", err)
	}
	return files, nil
}

// buildGraderBinary builds cmd/mhalab with every reference solution left out of its embedded
// files (go build -overlay): the binary sits on the machine that runs the students' code.
func (env *runner) buildGraderBinary(ctx context.Context) ([]byte, error) {
	tmp, err := os.MkdirTemp("", "mhalab-gradescope-*")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	solutionFiles, _ := filepath.Glob(filepath.Join(env.root, "lessons", "solutions", "files", "*", "*_solution.go"))
	overlay := map[string]string{}
	for _, f := range solutionFiles {
		overlay[f] = ""
	}
	overlayFile := filepath.Join(tmp, "overlay.json")
	data, _ := json.Marshal(map[string]any{"Replace": overlay})
	if err := os.WriteFile(overlayFile, data, 0o644); err != nil {
		return nil, err
	}
	bin := filepath.Join(tmp, "mhalab")
	build := exec.CommandContext(ctx, goBinary(), "build", "-trimpath", "-overlay", overlayFile, "-o", bin, "./cmd/mhalab")
	build.Dir = env.root
	build.Env = append(os.Environ(), "GOOS=linux", "GOARCH=amd64", "CGO_ENABLED=1")
	if out, err := build.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("gradescope: go build ./cmd/mhalab: %v: %s", err, firstLines(string(out), 3))
	}
	return os.ReadFile(bin)
}

// isAutograderZip reports whether data is a zip this command wrote.
func isAutograderZip(data []byte) bool {
	zr, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		return false
	}
	f, err := zr.Open("mhalab-autograder.json")
	if err != nil {
		return false
	}
	defer f.Close()
	var info autograderInfo
	return json.NewDecoder(f).Decode(&info) == nil && info.Generator == autograderMarker
}

const setupScript = `#!/usr/bin/env bash
# Gradescope runs this once, as root with network, when it builds the autograder image
# (written by mhalab lessons gradescope). It installs Go {{.GoVersion}} (go.mod's) in /usr/local/go,
# then prepare.sh fetches the modules the lessons import and compiles them once.
set -euo pipefail
ROOT="${MHALAB_AUTOGRADER_ROOT:-/autograder}"
GO_VERSION="{{.GoVersion}}"
if [ "$(/usr/local/go/bin/go env GOVERSION 2>/dev/null)" != "go$GO_VERSION" ]; then
    if ! command -v curl >/dev/null; then
        apt-get update
        DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends ca-certificates curl
    fi
    curl -fsSL "https://go.dev/dl/go$GO_VERSION.linux-amd64.tar.gz" -o /tmp/go.tar.gz
    rm -rf /usr/local/go
    tar -C /usr/local -xzf /tmp/go.tar.gz
    rm /tmp/go.tar.gz
fi
export PATH="/usr/local/go/bin:$PATH"
bash "$ROOT/source/prepare.sh"
`

const prepareScript = `#!/usr/bin/env bash
# The part of setup.sh after Go is installed (a test runs it alone): download the modules the
# lessons import (the network is needed for that) and compile the graded exercises once, with the
# flags the grader uses, so that grading a submission recompiles only the student's package.
set -euo pipefail
ROOT="${MHALAB_AUTOGRADER_ROOT:-/autograder}"
export PATH="/usr/local/go/bin:$PATH" GOTOOLCHAIN=local
cd "$ROOT/source/repo"
go version
go list -deps -test -tags lessons ./lessons/... >/dev/null
go test -tags lessons -trimpath -count=1 -run '^$' {{range .Exercises}}./lessons/{{.}} {{end}}
"$ROOT/source/mhalab" lessons list --root . >/dev/null
echo "mhalab autograder ready: exercises {{.Numbers}}"
`

const runAutograderScript = `#!/usr/bin/env bash
# Gradescope runs this for every submission (written by mhalab lessons gradescope): it grades
# exercises {{.Numbers}} of /autograder/submission and writes /autograder/results/results.json.
# Whatever goes wrong, it writes a results.json that says why, and exits 0.
set -u
ROOT="${MHALAB_AUTOGRADER_ROOT:-/autograder}"
SRC="$ROOT/source"
SUB="$ROOT/submission"
RESULTS="$ROOT/results/results.json"
export PATH="/usr/local/go/bin:$PATH" GOTOOLCHAIN=local GOPROXY=off
mkdir -p "$ROOT/results"

json_string() {
    local s=$1
    s=${s//\\/\\\\}
    s=${s//\"/\\\"}
    s=${s//$'\n'/\\n}
    s=${s//$'\t'/\\t}
    s=$(printf '%s' "$s" | tr -d '\000-\010\013-\037')
    printf '"%s"' "$s"
}

# give_up WHY: a results.json with score 0 and WHY as the output.
give_up() {
    local tmp="$RESULTS.tmp.$$"
    printf '{"score": 0, "execution_time": %d, "output": %s, "visibility": "visible", "stdout_visibility": "hidden", "tests": [], "extra_data": {"generator": "mhalab lessons grade"}}\n' \
        "$SECONDS" "$(json_string "$1")" >"$tmp" && mv -f "$tmp" "$RESULTS"
    echo "mhalab autograder: $1" >&2
    exit 0
}

WORK=$(mktemp -d) || give_up "the autograder could not make a temporary folder"
trap 'rm -rf "$WORK"' EXIT
STUDENT="$WORK/submission"
[ -d "$SUB" ] || give_up "no submission was found ($SUB)"

# 1. A copy of lessons/ (or of the repository): the shallowest folder holding an exercise folder.
base=""
for depth in 1 2 3 4; do
    for dir in {{range .Exercises}}{{.}} {{end}}; do
        hit=$(find "$SUB" -mindepth "$depth" -maxdepth "$depth" -type d -name "$dir" -not -path '*/__MACOSX/*' -print -quit)
        if [ -n "$hit" ]; then
            base=$(dirname "$hit")
            break 2
        fi
    done
done
if [ -n "$base" ]; then
    cp -R "$base" "$STUDENT" || give_up "the submission could not be copied"
else
    # 2. The exercise files alone (linear.go, …), anywhere in the submission.
    mkdir -p "$STUDENT"
    found=0
    wanted=""
{{range .Exercises}}    mkdir -p "$STUDENT/{{.}}"
    for keep in {{index $.Keep .}}; do cp "$SRC/repo/lessons/{{.}}/$keep" "$STUDENT/{{.}}/"; done
    wanted="$wanted {{index $.Files .}}"
    hit=$(find "$SUB" -maxdepth 4 -type f -name '{{index $.Files .}}' -not -path '*/__MACOSX/*' -print -quit)
    if [ -n "$hit" ]; then
        cp "$hit" "$STUDENT/{{.}}/" && found=1
    fi
{{end}}    [ "$found" = 1 ] || give_up "The submission holds neither a lessons folder nor any of the files to hand in:$wanted. Upload your lessons/ folder (or those files)."
fi

cd "$WORK"
"$SRC/mhalab" lessons grade --root "$SRC/repo" --exercises {{.Numbers}} --scoring {{.Scoring}} \
    --gradescope "$RESULTS" -o "$WORK/grades.csv" "$STUDENT" >"$WORK/report.md" 2>"$WORK/stderr.txt"
status=$?
cat "$WORK/report.md"
cat "$WORK/stderr.txt" >&2
if [ "$status" != 0 ] || [ ! -s "$RESULTS" ]; then
    give_up "The autograder failed (exit $status), not your code: tell your teacher. $(tail -n 5 "$WORK/stderr.txt")"
fi
`
