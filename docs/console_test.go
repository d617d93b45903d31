package docs

import (
	"testing"

	"github.com/mhalab/mhalab/docs/internal/docgen"
	"github.com/mhalab/mhalab/internal/testenv"
)

// TestConsoleBlocks runs the commands of every ```console block and compares their output with
// the block (make docs rewrites the blocks).
func TestConsoleBlocks(t *testing.T) {
	for _, blocks := range allBlocks(t) {
		for _, b := range blocks {
			if b.Lang != "console" {
				continue
			}
			opts, err := docgen.ParseConsoleMarker(b.Marker)
			if err != nil {
				t.Errorf("%s: ```console block: %v", b.Where(), err)
				continue
			}
			cmds := docgen.Commands(b.Body)
			if len(cmds) == 0 {
				t.Errorf("%s: ```console block without a \"$ \" command", b.Where())
				continue
			}
			if opts.Needs != "" && !docgen.ModelPresent(opts.Needs) {
				if testenv.InCI() {
					t.Errorf("%s: model %s is not set up (scripts/setup.sh --only %s)", b.Where(), opts.Needs, opts.Needs)
				} else {
					t.Logf("%s: not run: model %s is not set up (scripts/setup.sh --only %s)", b.Where(), opts.Needs, opts.Needs)
				}
				continue
			}
			got, err := docgen.RunConsole(root, cmds)
			if err != nil {
				t.Errorf("%s: %v", b.Where(), err)
				continue
			}
			switch opts.Mode {
			case "exact":
				if got != b.Body {
					t.Errorf("%s: the output changed (make docs rewrites it):\n%s", b.Where(), docgen.FirstDiff(b.Body, got))
				}
			case "numbers vary":
				if docgen.MaskNumbers(got) != docgen.MaskNumbers(b.Body) {
					t.Errorf("%s: the output changed beyond its numbers (make docs rewrites it):\n%s", b.Where(),
						docgen.FirstDiff(docgen.MaskNumbers(b.Body), docgen.MaskNumbers(got)))
				}
			}
		}
	}
}

func TestMaskNumbers(t *testing.T) {
	a := "compile:  0.30 ms (first run: 0.29 ms)\nrun: median 12 µs over 5 runs"
	b := "compile:  1.2 s (first run: 980 ms)\nrun: median 3.4 ms over 17 runs"
	if docgen.MaskNumbers(a) != docgen.MaskNumbers(b) {
		t.Errorf("%q != %q", docgen.MaskNumbers(a), docgen.MaskNumbers(b))
	}
	if docgen.MaskNumbers("rows sum to 1: true") == docgen.MaskNumbers("rows sum to 1: false") {
		t.Error("masking hides a changed word")
	}
}

func TestConsoleMarker(t *testing.T) {
	for marker, want := range map[string]docgen.ConsoleOptions{
		"console":                        {Mode: "exact"},
		"console: numbers vary":          {Mode: "numbers vary"},
		"console: machine; needs minilm": {Mode: "machine", Needs: "minilm"},
		"console: needs smollm2":         {Mode: "exact", Needs: "smollm2"},
	} {
		if got, err := docgen.ParseConsoleMarker(marker); err != nil || got != want {
			t.Errorf("ParseConsoleMarker(%q) = %+v, %v; want %+v", marker, got, err, want)
		}
	}
	for _, bad := range []string{"", "code: x.go", "console: sometimes", "console: needs gpt2"} {
		if _, err := docgen.ParseConsoleMarker(bad); err == nil {
			t.Errorf("ParseConsoleMarker(%q): no error", bad)
		}
	}
}
