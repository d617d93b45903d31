package main

import (
	"bytes"
	"os"
	"testing"

	"github.com/mhalab/mhalab/internal/backendtest"
	"github.com/mhalab/mhalab/internal/testenv"
)

// TestQuickstart runs the README's quick start (this package's main.go, which
// docs/docs_test.go checks the README shows verbatim) on every available backend.
func TestQuickstart(t *testing.T) {
	t.Chdir("../..") // main.go reads parity/testdata from the repository's root
	names, missing := backendtest.Available()
	for name, err := range missing {
		if testenv.InCI() {
			t.Errorf("backend %s: %v", name, err)
		} else {
			t.Logf("backend %s skipped: %v", name, err)
		}
	}
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			var out bytes.Buffer
			if err := run(&out, name); err != nil {
				t.Fatal(err)
			}
			const want = "output: (Float32)[2 4 8]\nequal to PyTorch's output within 1e-5: true\n"
			if out.String() != want {
				t.Errorf("output:\n%s\nwant:\n%s", out.String(), want)
			}
		})
	}
}

func TestQuickstartBadBackend(t *testing.T) {
	if err := run(os.Stdout, "tpu"); err == nil {
		t.Error("run(tpu): no error")
	}
}
