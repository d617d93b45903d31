package fastgo

import (
	"errors"
	"strings"
	"testing"
)

// TestLinkedGoMLXVersion: the test binary's build information names the GoMLX it links.
func TestLinkedGoMLXVersion(t *testing.T) {
	v, err := linkedGoMLXVersion()
	if err != nil || v != GoMLXVersion {
		t.Fatalf("linkedGoMLXVersion() = %q, %v; want %q (go.mod pins it)", v, err, GoMLXVersion)
	}
}

// TestVersionMismatchInstallsNothing: another GoMLX, or none readable, installs nothing with a
// reason that names both versions and the override; MHALAB_FASTGO=force overrides; 0 does not.
func TestVersionMismatchInstallsNothing(t *testing.T) {
	for _, tc := range []struct {
		version string
		readErr error
		env     string
		want    string // "" = install
	}{
		{GoMLXVersion, nil, "", ""},
		{GoMLXVersion, nil, "0", ""},
		{"v0.28.1", nil, "", "built with github.com/gomlx/gomlx v0.28.1, fastgo is written for v0.26.0 only; installed nothing"},
		{"v0.28.1", nil, "0", "v0.28.1"},
		{"v0.28.1", nil, "force", ""},
		{"(devel)", nil, "", "(devel)"},
		{"", errors.New("fastgo: no build information"), "", "no build information; installed nothing (MHALAB_FASTGO=force"},
	} {
		err := checkVersion(tc.version, tc.readErr, tc.env)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("checkVersion(%q, %v, %q) = %v, want nil", tc.version, tc.readErr, tc.env, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("checkVersion(%q, %v, %q) = %v, want an error containing %q", tc.version, tc.readErr, tc.env, err, tc.want)
		}
	}
}

// TestStatusSaysWhyNothingIsInstalled: with a mismatch injected through linkedGoMLXVersion, the
// decision init takes says so through InstallError and Status, and SetEnabled cannot switch on
// what is not installed.
func TestStatusSaysWhyNothingIsInstalled(t *testing.T) {
	defer func(f func() (string, error), err error, on bool) {
		linkedGoMLXVersion, installErr = f, err
		enabled.Store(on)
	}(linkedGoMLXVersion, installErr, enabled.Load())
	linkedGoMLXVersion = func() (string, error) { return "v0.99.0", nil }
	installErr = versionDecision("")
	enabled.Store(false)
	if InstallError() == nil || !strings.Contains(Status(), "v0.99.0") || !strings.Contains(Status(), "installed nothing") {
		t.Fatalf("InstallError() = %v, Status() = %q; want the mismatch named", InstallError(), Status())
	}
	if SetEnabled(true); Enabled() {
		t.Fatal("SetEnabled(true) switched on a fastgo that installed nothing")
	}
}
