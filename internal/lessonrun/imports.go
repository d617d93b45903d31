package lessonrun

import "github.com/mhalab/mhalab/lessons"

// checkImports: not yet.
func checkImports(e lessons.Exercise, files map[string][]byte) []string { return nil }
