package xla

import (
	"slices"
	"testing"
)

// TestHugePagesWanted: ExecWithHugePages starts the program again only where the tunable helps
// and nobody decided otherwise.
func TestHugePagesWanted(t *testing.T) {
	for _, c := range []struct {
		env    map[string]string
		thp    string
		glibc  string
		setuid bool
		want   bool
	}{
		{nil, "madvise", "2.36", false, true},
		{nil, "madvise", "2.35", false, true},
		{nil, "madvise", "3.0", false, true},
		{nil, "madvise", "2.34", false, false}, // no glibc.malloc.hugetlb yet
		{nil, "madvise", "", false, false},     // another C library
		{nil, "always", "2.36", false, false},  // huge pages everywhere already
		{nil, "never", "2.36", false, false},   // none to be had
		{nil, "", "2.36", false, false},        // mode unknown
		{nil, "madvise", "2.36", true, false},  // glibc ignores tunables in set-user-ID programs
		{map[string]string{"MHALAB_HUGEPAGES": "0"}, "madvise", "2.36", false, false},
		{map[string]string{"MHALAB_HUGEPAGES": "1"}, "madvise", "2.36", false, true},
		{map[string]string{"MHALAB_HUGEPAGES_EXEC": "1"}, "madvise", "2.36", false, false}, // started by it already
		{map[string]string{"GLIBC_TUNABLES": "glibc.malloc.hugetlb=0"}, "madvise", "2.36", false, false},
		{map[string]string{"GLIBC_TUNABLES": "glibc.malloc.arena_max=2"}, "madvise", "2.36", false, true},
	} {
		got := hugePagesWanted(func(k string) string { return c.env[k] }, c.thp, c.glibc, c.setuid)
		if got != c.want {
			t.Errorf("environment %v, THP %q, glibc %q, set-user-ID %v: wanted %v, want %v", c.env, c.thp, c.glibc, c.setuid, got, c.want)
		}
	}
}

// TestWithHugetlbTunable: the tunable is appended to the user's $GLIBC_TUNABLES, or added.
func TestWithHugetlbTunable(t *testing.T) {
	for _, c := range []struct{ env, want []string }{
		{[]string{"A=1"}, []string{"A=1", "GLIBC_TUNABLES=glibc.malloc.hugetlb=1"}},
		{[]string{"GLIBC_TUNABLES=glibc.malloc.arena_max=2", "B=2"}, []string{"GLIBC_TUNABLES=glibc.malloc.arena_max=2:glibc.malloc.hugetlb=1", "B=2"}},
		{[]string{"GLIBC_TUNABLES="}, []string{"GLIBC_TUNABLES=glibc.malloc.hugetlb=1"}},
		{nil, []string{"GLIBC_TUNABLES=glibc.malloc.hugetlb=1"}},
	} {
		if got := withHugetlbTunable(c.env); !slices.Equal(got, c.want) {
			t.Errorf("withHugetlbTunable(%q) = %q, want %q", c.env, got, c.want)
		}
	}
}

func TestTHPMode(t *testing.T) {
	for in, want := range map[string]string{
		"always [madvise] never\n": "madvise",
		"[always] madvise never":   "always",
		"always madvise [never]":   "never",
		"":                         "",
		"garbage]":                 "",
	} {
		if got := thpMode(in); got != want {
			t.Errorf("thpMode(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestGlibcAtLeast(t *testing.T) {
	for v, want := range map[string]bool{"2.35": true, "2.36": true, "2.35.1": true, "3.1": true, "2.34": false, "1.99": false, "": false, "2": false, "x.y": false} {
		if got := glibcAtLeast(v, 2, 35); got != want {
			t.Errorf("glibcAtLeast(%q, 2, 35) = %v, want %v", v, got, want)
		}
	}
}
