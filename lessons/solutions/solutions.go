// Package solutions holds the reference solutions of the exercises, for maintainers (`mhalab
// lessons verify`), teachers, and a student who has passed an exercise (`mhalab lessons solution
// N`, as rustlings shows its solutions). They sit in files/NN_name/<name>_solution.go, away from
// the students' folders, and are embedded in the mhalab binary.
//
// Student copies carry none: the classroom images' build context and the JupyterHub students'
// copies leave out every *_solution.go (docker/Dockerfile.dockerignore, docker/build.sh,
// docker/jupyterhub_config.py; docker/solutions_test.go checks). A binary built from such a copy
// embeds only files/README.md: Available then reports false.
package solutions

import (
	"embed"
	"fmt"
	"io/fs"
	"path"
	"strings"
)

// files holds files/README.md (always there, so that a copy without solutions builds) and the
// solutions the tree had when this binary was built.
//
//go:embed files
var files embed.FS

// Available reports whether this binary carries the reference solutions (false when it was
// built from a student's copy).
func Available() bool {
	n := 0
	_ = fs.WalkDir(files, "files", func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, "_solution.go") {
			n++
		}
		return nil
	})
	return n > 0
}

// Source returns the reference solution file of an exercise, e.g. Source("01_linear",
// "linear_solution.go"), as stored: it starts with the build constraint `//go:build solution`,
// which keeps it out of every build but verify's.
func Source(dir, name string) ([]byte, error) {
	data, err := files.ReadFile(path.Join("files", dir, name))
	if err != nil {
		if Available() {
			return nil, fmt.Errorf("solutions: no reference solution %s/%s in this binary", dir, name)
		}
		return nil, fmt.Errorf("solutions: this mhalab carries no reference solutions (it was built from a student's copy; a teacher's build from the full repository has them)")
	}
	return data, nil
}

// Constraint is the build constraint line every solution file starts with.
const Constraint = "//go:build solution\n"

// AsStudentFile returns a solution as a student would write it in the stub's place: without the
// build constraint.
func AsStudentFile(src []byte) []byte {
	return []byte(strings.TrimLeft(strings.TrimPrefix(string(src), Constraint), "\n"))
}
