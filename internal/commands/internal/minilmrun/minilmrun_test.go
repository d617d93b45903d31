package minilmrun

import (
	"path/filepath"
	"strings"
	"testing"
)

func TestLoadRefusesBadOptionsFirst(t *testing.T) {
	for _, c := range []struct {
		o         Options
		sentences []string
		want      string
	}{
		{Options{MaxTokens: 513}, []string{"a"}, "--max-tokens 513 is above the model's 512 positions"},
		{Options{MaxTokens: 2}, []string{"a"}, "--max-tokens 2: want 3 to 512 (0 = 256)"},
		{Options{}, []string{"fine", "ab\xffc"}, "sentence 2: invalid UTF-8 at byte offset 2"},
		{Options{Model: filepath.Join(t.TempDir(), "none")}, []string{"a"}, "none"},
	} {
		if _, err := Load(c.o, c.sentences); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v %q: error %v, want %q", c.o, c.sentences, err, c.want)
		}
	}
}

func TestFilesAreTheModelsThree(t *testing.T) {
	files := Files("/m")
	if len(files) != 3 {
		t.Fatalf("files %v", files)
	}
	for _, f := range files {
		if !strings.HasPrefix(f.Flag, "--model's ") || filepath.Dir(f.Path) != "/m" {
			t.Errorf("file %+v", f)
		}
	}
}
