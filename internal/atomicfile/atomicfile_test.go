package atomicfile

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// entries returns the names in dir.
func entries(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range es {
		names = append(names, e.Name())
	}
	return names
}

// failingWriter writes some bytes, then fails: a crash in the middle of a write.
func failingWrite(w io.Writer) error {
	if _, err := io.WriteString(w, "half of the new"); err != nil {
		return err
	}
	return errors.New("disk on fire")
}

func TestFailedWriteLeavesDestinationUntouched(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "out.safetensors")
	if err := os.WriteFile(path, []byte("the good old file"), 0o640); err != nil {
		t.Fatal(err)
	}
	err := Write(path, failingWrite)
	if err == nil || !strings.Contains(err.Error(), "disk on fire") {
		t.Fatalf("Write = %v, want the writer's error", err)
	}
	got, _ := os.ReadFile(path)
	if string(got) != "the good old file" {
		t.Errorf("destination after a failed write: %q", got)
	}
	if names := entries(t, dir); len(names) != 1 {
		t.Errorf("files left in the folder: %v, want only out.safetensors", names)
	}
}

func TestFailedWriteCreatesNothing(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "new.json")
	if err := Write(path, failingWrite); err == nil {
		t.Fatal("Write succeeded")
	}
	if names := entries(t, dir); len(names) != 0 {
		t.Errorf("files left in the folder: %v", names)
	}
}

func TestWriteReplacesAndKeepsMode(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "report.json")
	if err := WriteFile(path, []byte("new")); err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(path)
	if err != nil || st.Mode().Perm() != 0o644 {
		t.Fatalf("new file: %v, mode %v, want 0644", err, st.Mode().Perm())
	}
	if err := os.Chmod(path, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := WriteFile(path, []byte("newer")); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(path)
	st, _ = os.Stat(path)
	if string(got) != "newer" || st.Mode().Perm() != 0o600 {
		t.Errorf("replaced file: %q, mode %v; want \"newer\", 0600 (the old file's mode)", got, st.Mode().Perm())
	}
	if names := entries(t, dir); len(names) != 1 {
		t.Errorf("files left in the folder: %v", names)
	}
}

func TestWriteThroughSymlinkReplacesTarget(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "real.html")
	link := filepath.Join(dir, "link.html")
	if err := os.WriteFile(target, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("real.html", link); err != nil {
		t.Skip("no symbolic links here:", err)
	}
	if err := WriteFile(link, []byte("new")); err != nil {
		t.Fatal(err)
	}
	if st, err := os.Lstat(link); err != nil || st.Mode()&os.ModeSymlink == 0 {
		t.Errorf("the link was replaced by a file (%v)", err)
	}
	if got, _ := os.ReadFile(target); string(got) != "new" {
		t.Errorf("target holds %q, want new", got)
	}
	// A dangling link stands for the file it names.
	dangling := filepath.Join(dir, "dangling")
	if err := os.Symlink("later.txt", dangling); err != nil {
		t.Fatal(err)
	}
	if err := WriteFile(dangling, []byte("x")); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(filepath.Join(dir, "later.txt")); string(got) != "x" {
		t.Errorf("later.txt holds %q, want x", got)
	}
}

func TestWriteRefusesFolder(t *testing.T) {
	dir := t.TempDir()
	err := WriteFile(dir, []byte("x"))
	if err == nil || !strings.Contains(err.Error(), "is a folder") {
		t.Errorf("WriteFile(folder) = %v, want an error saying it is a folder", err)
	}
	if err := WriteFile(filepath.Join(dir, "no", "such", "f"), []byte("x")); err == nil ||
		!strings.Contains(err.Error(), "does not exist") {
		t.Errorf("WriteFile into a missing folder = %v, want an error saying the folder does not exist", err)
	}
}
