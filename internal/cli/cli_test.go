package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestCheckOutputRefusesAnInputOrAFolder(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "in.safetensors")
	if err := os.WriteFile(in, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink(in, link); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		out  string
		want string // "" = fine
	}{
		{filepath.Join(dir, "new.safetensors"), ""},
		{"", ""},
		{in, "--out " + in + " is the same file as --inputs " + in + ": refusing to overwrite an input"},
		{link, "is the same file as --inputs"},
		{dir, "is a folder: give a file name"},
		{filepath.Join(dir, "no", "such", "out"), "--out " + filepath.Join(dir, "no", "such", "out")},
	} {
		err := CheckOutput(FileArg{Flag: "--out", Path: c.out}, true, FileArg{Flag: "--inputs", Path: in}, FileArg{})
		if (c.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), c.want)) {
			t.Errorf("--out %q: error %v, want %q", c.out, err, c.want)
		}
	}
}

func TestCheckMemoryIsExact(t *testing.T) {
	// 2^40 × 2^40 × 4 bytes overflows int64: the message says its true size.
	err := CheckMemory("subject", "the forward pass", 1<<30, TensorNeed{What: "x", Count: 1, Dims: []int{1 << 40, 1 << 40}})
	if err == nil || !strings.Contains(err.Error(), "subject: the forward pass would need 4.0 YiB of float32 tensors (x [1099511627776 1099511627776]), more than --max-memory 1.0 GiB") {
		t.Errorf("error %v", err)
	}
	if err := CheckMemory("s", "a", 64, TensorNeed{What: "x", Count: 2, Dims: []int{2, 4}}); err != nil {
		t.Errorf("64 bytes within 64: %v", err)
	}
}

func TestCheckSizesAndHeads(t *testing.T) {
	if err := CheckSizes(Size{"batch", 1}, Size{"seq", 0}); err == nil || err.Error() != "--seq 0: want a positive number" {
		t.Errorf("error %v", err)
	}
	if err := CheckHeads("heads", 5, "dmodel", 512); err == nil || !strings.Contains(err.Error(), "(try --heads 4)") {
		t.Errorf("error %v", err)
	}
}

func TestCheckBackendIsAUsageError(t *testing.T) {
	var ue *UsageError
	if err := CheckBackend("tpu"); err == nil || !asUsage(err, &ue) {
		t.Errorf("tpu: %v, want a *UsageError", err)
	}
	for _, spec := range []string{"", "go", "xla:cpu"} {
		if err := CheckBackend(spec); err != nil {
			t.Errorf("%q: %v", spec, err)
		}
	}
}

func asUsage(err error, ue **UsageError) bool {
	u, ok := err.(*UsageError)
	*ue = u
	return ok
}

func TestBuildNoteOnlyForTheGoBackend(t *testing.T) {
	const note = "built without GOEXPERIMENT=simd"
	if got := withBuildNote("go (requested)", true, note); got != "go (requested); "+note {
		t.Errorf("go backend: %q", got)
	}
	if got := withBuildNote("xla:cpu (requested)", false, note); got != "xla:cpu (requested)" {
		t.Errorf("xla backend got the go backend's note: %q", got)
	}
	if got := withBuildNote("go (requested)", true, ""); got != "go (requested)" {
		t.Errorf("no note: %q", got)
	}
}
