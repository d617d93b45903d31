package testenv

import (
	"os"
	"os/exec"
	"testing"
)

// ChromiumEnv names the browser the browser tests use, when set.
const ChromiumEnv = "MHALAB_CHROMIUM"

// Chromium returns the headless browser to test with: $MHALAB_CHROMIUM, else chromium,
// chromium-browser or google-chrome on PATH; without one it calls RequireOrSkip.
func Chromium(t testing.TB) string {
	t.Helper()
	if p := os.Getenv(ChromiumEnv); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	RequireOrSkip(t, "no Chromium (Debian: apt-get install chromium; scripts/test.sh does it as root under CI; or set "+ChromiumEnv+")")
	return ""
}
