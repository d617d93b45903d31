package docker

// Students' copies hold no reference solution: the JupyterHub students' copies
// (jupyterhub_config.py), the images' build context (Dockerfile.dockerignore,
// Dockerfile.cuda.dockerignore) and the context docker/build.sh makes (context.sh). The
// solutions live in lessons/solutions/files/NN_name/*_solution.go (teachers, `mhalab lessons
// verify`); a copy keeps lessons/solutions/files/README.md so that mhalab builds there.

import (
	"bytes"
	"crypto/sha256"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"testing"
)

// solutionFiles returns the repository's reference solutions: path (from the repository root)
// → sha256 of the content. The test fails when there are none (it would prove nothing).
func solutionFiles(t *testing.T) map[string][32]byte {
	t.Helper()
	out := map[string][32]byte{}
	err := filepath.WalkDir("../lessons", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, "_solution.go") {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		out[strings.TrimPrefix(filepath.ToSlash(p), "../")] = sha256.Sum256(data)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(out) < 10 {
		t.Fatalf("found %d reference solutions under lessons/, want one per exercise", len(out))
	}
	return out
}

// checkNoSolutions fails for every file under dir that is a reference solution, by name or by
// content, and when dir lacks what mhalab needs to build without them.
func checkNoSolutions(t *testing.T, what, dir string, solutions map[string][32]byte) {
	t.Helper()
	sums := map[[32]byte]string{}
	for p, s := range solutions {
		sums[s] = p
	}
	n := 0
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		n++
		rel, _ := filepath.Rel(dir, p)
		if strings.HasSuffix(p, "_solution.go") {
			t.Errorf("%s holds %s: a student's copy must not hold the reference solutions", what, rel)
			return nil
		}
		if data, err := os.ReadFile(p); err == nil {
			if src, ok := sums[sha256.Sum256(data)]; ok {
				t.Errorf("%s holds %s, a copy of the reference solution %s", what, rel, src)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, need := range []string{"lessons/solutions/files/README.md", "lessons/solutions/solutions.go", "lessons/01_linear/linear.go", "lessons/01_linear/linear_test.go"} {
		if _, err := os.Stat(filepath.Join(dir, need)); err != nil {
			t.Errorf("%s lacks %s (mhalab and the exercises need it)", what, need)
		}
	}
	t.Logf("%s: %d files checked", what, n)
}

// TestHubStudentCopyHasNoSolutions: the copy of the repository a JupyterHub student gets (the
// config's pre_spawn_hook, run for real by the stand-in) holds no solution, and mhalab's
// solutions package still builds in it (with none embedded).
func TestHubStudentCopyHasNoSolutions(t *testing.T) {
	python, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 not found")
	}
	solutions := solutionFiles(t)
	env, state := hubEnv(t)
	env = append(env, "MHALAB_HUB_AUTH=shared-password", "MHALAB_HUB_USERS=ada", "MHALAB_HUB_PASSWORD=correct-horse")
	if _, stderr, code := loadHubConfig(t, python, env, "ada"); code != 0 {
		t.Fatalf("loading the config: exit %d: %s", code, stderr)
	}
	copyDir := filepath.Join(state, "hub", "homes", "ada", "mhalab")
	checkNoSolutions(t, "the hub student's copy", copyDir, solutions)
	if goBin, err := exec.LookPath("go"); err == nil {
		cmd := exec.Command(goBin, "build", "./lessons/solutions")
		cmd.Dir = copyDir
		cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOPROXY=off", "GOTOOLCHAIN=local")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("go build ./lessons/solutions in the student's copy: %v\n%s", err, out)
		}
	}
}

// dockerignoreExcludes reports whether the patterns of a .dockerignore exclude the file rel
// (slash-separated, from the context root). It knows what mhalab's ignore files use: plain
// paths and globs, "**/" prefixes, and "!" exceptions (the last matching line wins).
func dockerignoreExcludes(patterns []string, rel string) bool {
	excluded := false
	for _, p := range patterns {
		neg := strings.HasPrefix(p, "!")
		p = strings.TrimPrefix(p, "!")
		match := func(name string) bool {
			ok, _ := path.Match(p, name)
			return ok
		}
		if rest, ok := strings.CutPrefix(p, "**/"); ok {
			p = rest
			match = func(name string) bool {
				parts := strings.Split(name, "/")
				for i := range parts {
					if ok, _ := path.Match(p, strings.Join(parts[i:], "/")); ok {
						return true
					}
				}
				return false
			}
		}
		// A pattern also excludes everything under a matching folder.
		parts := strings.Split(rel, "/")
		for i := 1; i <= len(parts); i++ {
			if match(strings.Join(parts[:i], "/")) {
				excluded = !neg
				break
			}
		}
	}
	return excluded
}

func ignorePatterns(t *testing.T, name string) []string {
	t.Helper()
	var out []string
	for _, line := range strings.Split(readFile(t, name), "\n") {
		line = strings.TrimSpace(line)
		if line != "" && !strings.HasPrefix(line, "#") {
			out = append(out, strings.TrimPrefix(path.Clean(line), "/"))
		}
	}
	return out
}

// TestImageContextHasNoSolutions: the images' build context (what COPY . copies into the
// students' /home/mha/mhalab) leaves out every reference solution, by each Dockerfile's
// .dockerignore and in the context docker/build.sh makes from git (context.sh).
func TestImageContextHasNoSolutions(t *testing.T) {
	solutions := solutionFiles(t)
	for _, name := range dockerfiles {
		patterns := ignorePatterns(t, name+".dockerignore")
		for p := range solutions {
			if !dockerignoreExcludes(patterns, p) {
				t.Errorf("%s.dockerignore lets %s into the image", name, p)
			}
		}
		for _, keep := range []string{"lessons/solutions/files/README.md", "lessons/solutions/solutions.go", "lessons/05_sdpa/sdpa.go", "go.mod"} {
			if dockerignoreExcludes(patterns, keep) {
				t.Errorf("%s.dockerignore leaves out %s, which the image needs", name, keep)
			}
		}
	}

	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git: context.sh not run")
	}
	if err := exec.Command("git", "-C", "..", "rev-parse", "HEAD").Run(); err != nil {
		t.Skip("not a git checkout: context.sh not run")
	}
	dir := t.TempDir()
	var stderr bytes.Buffer
	cmd := exec.Command("bash", "context.sh", dir)
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("context.sh: %v\n%s", err, stderr.String())
	}
	checkNoSolutions(t, "docker/build.sh's context", dir, solutions)
}
