package docs

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/mhalab/mhalab/docs/internal/docgen"
)

// TestGeneratedRegions checks each generated region (notebook and lesson tables, performance
// reports) against what its generator writes now (make docs rewrites them), as this user and as
// another one: the regions must not depend on the home folder of whoever generates them (the
// bench reports named /root/…, which rendered as ~/… only where $HOME is /root, so make test
// failed for every other user).
func TestGeneratedRegions(t *testing.T) {
	t.Run("this user", checkGeneratedRegions)
	t.Run("another home", func(t *testing.T) {
		t.Setenv("HOME", t.TempDir())
		checkGeneratedRegions(t)
	})
}

func checkGeneratedRegions(t *testing.T) {
	for _, file := range docFiles(t) {
		data, err := os.ReadFile(filepath.Join(root, file))
		if err != nil {
			t.Fatal(err)
		}
		out, err := docgen.Regenerate(root, file, string(data))
		if err != nil {
			t.Error(err)
			continue
		}
		if out != string(data) {
			t.Errorf("%s: a generated region is out of date (make docs rewrites it):\n%s", file, docgen.FirstDiff(string(data), out))
		}
	}
}
