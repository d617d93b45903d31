package testenv

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
)

func TestInCI(t *testing.T) {
	for _, c := range []struct {
		value string
		want  bool
	}{{"true", true}, {"1", true}, {"yes", true}, {"", false}, {"false", false}, {"0", false}, {"no", false}} {
		t.Setenv("CI", c.value)
		if got := InCI(); got != c.want {
			t.Errorf("CI=%q: InCI() = %v, want %v", c.value, got, c.want)
		}
	}
}

// fakeT records what RequireOrSkip does with a test.
type fakeT struct {
	testing.TB
	skipped, failed string
}

func (f *fakeT) Helper()                   {}
func (f *fakeT) Skip(args ...any)          { f.skipped = args[0].(string) }
func (f *fakeT) Fatalf(s string, a ...any) { f.failed = s }

func TestRequireOrSkip(t *testing.T) {
	t.Setenv("CI", "")
	f := &fakeT{}
	RequireOrSkip(f, "no browser")
	if f.skipped != "no browser" || f.failed != "" {
		t.Errorf("outside CI: skipped %q, failed %q; want a skip", f.skipped, f.failed)
	}
	t.Setenv("CI", "yes")
	f = &fakeT{}
	RequireOrSkip(f, "no browser")
	if f.skipped != "" || f.failed == "" {
		t.Errorf("CI=yes: skipped %q, failed %q; want a failure", f.skipped, f.failed)
	}
}

// The shell scripts and the Makefile decide "under CI" with the same values as InCI.
func TestShellAndMakeAgree(t *testing.T) {
	for _, c := range []struct {
		file string
		re   *regexp.Regexp
		sep  string
	}{
		{"../../scripts/test.sh", regexp.MustCompile(`case "\$\{CI:-\}" in ([^)]+)\)`), "|"},
		{"../../Makefile", regexp.MustCompile(`\$\(filter ([^,]+),\$\(CI\)\)`), " "},
	} {
		data, err := os.ReadFile(c.file)
		if err != nil {
			t.Fatal(err)
		}
		m := c.re.FindAllSubmatch(data, -1)
		if len(m) != 1 {
			t.Errorf("%s: %d definitions of CI's values (%s), want 1", c.file, len(m), c.re)
			continue
		}
		if got := strings.Split(string(m[0][1]), c.sep); !slices.Equal(got, ciValues) {
			t.Errorf("%s accepts CI=%q, internal/testenv %q", c.file, got, ciValues)
		}
	}
}

func TestSeed(t *testing.T) {
	t.Setenv("MHALAB_TEST_SEED", "")
	if s := Seed(t, 7); s != 7 {
		t.Errorf("default: seed %d, want 7", s)
	}
	t.Setenv("MHALAB_TEST_SEED", "12345")
	if s := Seed(t, 7); s != 12345 {
		t.Errorf("MHALAB_TEST_SEED=12345: seed %d", s)
	}
	t.Setenv("MHALAB_TEST_SEED", "random")
	if a, b := Seed(t, 7), Seed(t, 7); a == b {
		t.Errorf("MHALAB_TEST_SEED=random gave %d twice", a)
	}
}
