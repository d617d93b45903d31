package lessonrun

// The pristine files of the lessons (graders, given files, helpers, fixtures): where they come
// from and how grading puts them back.

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/mhalab/mhalab/internal/atomicfile"

	"github.com/mhalab/mhalab/lessons"
)

// original returns the pristine content of lessons/<name>: the copy embedded in this binary when
// it is genuine, else the git object the manifest names (a binary built from an edited tree
// embeds the edit, but git still has the original).
func (env *runner) original(name string) ([]byte, error) {
	data, genuine, err := lessons.Original(name)
	if err != nil {
		return nil, err
	}
	if genuine {
		return data, nil
	}
	hash, _ := lessons.ManifestHash(name)
	out, err := exec.Command("git", "-C", env.root, "cat-file", "blob", hash).Output()
	if err == nil && lessons.GitBlobHash(out) == hash {
		return out, nil
	}
	return nil, fmt.Errorf("the original of lessons/%s is not in this mhalab binary (it was built from an edited copy) nor in git: restore it with `git checkout -- lessons/%s` or rebuild mhalab from a clean checkout", name, name)
}

// restore writes the original of each file over the copy in lessons/ when they differ, and
// returns one note per file it restored.
func (env *runner) restore(names []string) ([]string, error) {
	var notes []string
	for _, name := range names {
		want, err := env.original(name)
		if err != nil {
			return notes, err
		}
		path := env.inLessons(name)
		got, err := os.ReadFile(path)
		switch {
		case err == nil && bytes.Equal(got, want):
			continue
		case errors.Is(err, os.ErrNotExist):
			notes = append(notes, fmt.Sprintf("lessons/%s was missing: restored it from the original.", name))
		default:
			notes = append(notes, fmt.Sprintf("lessons/%s was changed: restored it from the original (graders and given files cannot be edited to pass).", name))
		}
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return notes, err
		}
		if err := atomicfile.WriteFile(path, want); err != nil {
			return notes, fmt.Errorf("restoring lessons/%s: %w", name, err)
		}
	}
	return notes, nil
}

// protectedFiles lists what grading restores: the shared files and each exercise's grader
// and given files.
func protectedFiles(exercises []lessons.Exercise) []string {
	names := lessons.Shared()
	for _, e := range exercises {
		names = append(names, e.Protected()...)
	}
	return names
}
