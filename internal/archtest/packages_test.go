package archtest

import (
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// backticked is a `word` of ARCHITECTURE.md.
var backticked = regexp.MustCompile("`([^`\\s]+)`")

// TestArchitectureNamesEveryPackage fails when a package of `go list ./...` is not named in
// ARCHITECTURE.md: as `path` in backquotes, or matched by a backquoted pattern with a `*` or
// `[…]` (path.Match: `lessons/[0-9][0-9]_*` names every lesson), so that the document lists
// the module's packages as they are.
func TestArchitectureNamesEveryPackage(t *testing.T) {
	doc, err := os.ReadFile("../../ARCHITECTURE.md")
	if err != nil {
		t.Fatal(err)
	}
	named, patterns := map[string]bool{}, []string{}
	for _, m := range backticked.FindAllStringSubmatch(string(doc), -1) {
		word := strings.TrimSuffix(m[1], "/")
		if strings.ContainsAny(word, "*[") {
			patterns = append(patterns, word)
		}
		named[word] = true
	}
	for _, p := range goList(t, "./...") {
		rel, _ := relative(p.ImportPath)
		if named[rel] || slicesAny(patterns, func(pat string) bool { ok, _ := path.Match(pat, rel); return ok }) {
			continue
		}
		t.Errorf("ARCHITECTURE.md does not name the package %s (write `%s` where its layer is listed)", rel, rel)
	}
}

// TestCommandsArePackageMain: every package main is in a command tree (cmd/... or one listed in
// commands), and each listed tree besides cmd/ is itself a package main.
func TestCommandsArePackageMain(t *testing.T) {
	names := map[string]string{}
	for _, p := range goList(t, "./...") {
		rel, _ := relative(p.ImportPath)
		names[rel] = p.Name
		if p.Name == "main" && layerOf(rel) != command {
			t.Errorf("%s is a package main but layer %v: add it to commands (internal/archtest/arrows_test.go)", rel, layerOf(rel))
		}
	}
	for _, c := range commands {
		if c != "cmd" && names[c] != "main" {
			t.Errorf("commands lists %s, which is package %q, not main", c, names[c])
		}
	}
}

// TestOneOwnerOfGoMLXPatches: only mhalib/dotgrad writes GoMLX's table of gradients
// (graph.VJPRegistration), and only fastgo reaches GoMLX's unexported functions with
// //go:linkname — in the module's non-test Go files.
func TestOneOwnerOfGoMLXPatches(t *testing.T) {
	writesVJP := regexp.MustCompile(`VJPRegistration\[[^\]]*\]\s*=[^=]`)
	linkname := regexp.MustCompile(`(?m)^//go:linkname `)
	found := map[string]string{}
	err := filepath.WalkDir("../..", func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (strings.HasPrefix(d.Name(), ".") && p != "../.." || d.Name() == "testdata" || d.Name() == "node_modules") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return nil
		}
		src, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel("../..", filepath.Dir(p))
		rel = filepath.ToSlash(rel)
		if writesVJP.Match(src) {
			found["VJPRegistration "+rel] = p
			if rel != "mhalib/dotgrad" {
				t.Errorf("%s writes graph.VJPRegistration: only mhalib/dotgrad changes GoMLX's gradients (call dotgrad.Install)", p)
			}
		}
		if linkname.Match(src) && rel != "fastgo" {
			t.Errorf("%s uses //go:linkname: only fastgo reaches GoMLX's internals (its doc lists what to check on an upgrade)", p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := found["VJPRegistration mhalib/dotgrad"]; !ok {
		t.Error("mhalib/dotgrad does not write graph.VJPRegistration: the check above is looking at the wrong thing")
	}
}

func slicesAny(xs []string, f func(string) bool) bool {
	for _, x := range xs {
		if f(x) {
			return true
		}
	}
	return false
}
