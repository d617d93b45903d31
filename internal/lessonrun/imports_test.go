package lessonrun

import (
	"strings"
	"testing"

	"github.com/mhalab/mhalab/lessons"
)

// TestCheckImports: what each exercise refuses and allows, however the package is imported.
func TestCheckImports(t *testing.T) {
	file := func(pkg, imports, body string) string {
		return "package " + pkg + "\n\nimport (\n" + imports + "\n)\n\nfunc F() {\n" + body + "\n}\n"
	}
	const graph = "\t. \"github.com/gomlx/gomlx/pkg/core/graph\"\n"
	cases := []struct {
		name     string
		exercise int
		src      string
		want     []string // substrings of the problems, in order; none = accepted
	}{
		{"graph only", 5, file("sdpa", graph, "_ = Softmax"), nil},
		{"mhalib call", 5, file("sdpa", graph+"\t\"github.com/mhalab/mhalab/mhalib\"", "mhalib.ScaledDotProductAttention(nil, nil, nil)"),
			[]string{"x.go:9: uses mhalib.ScaledDotProductAttention: exercise 5 asks you to write it yourself"}},
		{"renamed", 5, file("sdpa", "\tm \"github.com/mhalab/mhalab/mhalib\"", "m.FlashAttention(nil, nil, nil)"), []string{"uses mhalib.FlashAttention"}},
		{"dot import", 5, file("sdpa", "\t. \"github.com/mhalab/mhalab/mhalib\"", ""), []string{`x.go:4: imports github.com/mhalab/mhalab/mhalib as "."`}},
		{"blank import", 1, file("linear", "\t_ \"github.com/mhalab/mhalab/mhalib\"", ""), []string{`as "_"`}},
		{"float64 reference", 6, file("masks", "\t\"github.com/mhalab/mhalab/mhalib/mhatest\"", "mhatest.X()"), []string{"uses mhatest.X", "may not use mhalab's own packages"}},
		{"allowed pieces", 7, file("mha", "\t\"github.com/mhalab/mhalab/mhalib\"", "mhalib.SplitHeads(nil, 2)\nmhalib.MergeHeads(nil)\nmhalib.ScaledDotProductAttention(nil, nil, nil)"), nil},
		{"the whole answer", 7, file("mha", "\t\"github.com/mhalab/mhalab/mhalib\"", "mhalib.SplitHeads(nil, 2)\nmhalib.MultiHeadAttention(nil, nil, nil, nil, 2)"),
			[]string{"uses mhalib.MultiHeadAttention", "except mhalib.SplitHeads, mhalib.MergeHeads, mhalib.ScaledDotProductAttention"}},
		{"GoMLX layers", 7, file("mha", "\t\"github.com/gomlx/gomlx/pkg/ml/layers\"", "layers.MultiHeadAttention(nil, nil, nil, nil, 2, 4)"), []string{"imports github.com/gomlx/gomlx/pkg/ml/layers: GoMLX's layers"}},
		{"GoMLX initializers", 2, file("xavier", "\t\"github.com/gomlx/gomlx/pkg/ml/context/initializers\"", ""), []string{"GoMLX's initializers have Xavier built in"}},
		{"torchio reader", 10, file("statedict", "\t\"github.com/mhalab/mhalab/torchio\"", "f, _ := torchio.ReadFile(\"x\")\n_ = f"), nil},
		{"torchio loader", 10, file("statedict", "\t\"github.com/mhalab/mhalab/torchio\"", "torchio.InferMHA(nil)"), []string{"uses torchio.InferMHA"}},
		{"does not parse", 5, "package sdpa\nfunc (", nil},
		{"linkname", 5, "package sdpa\n\nimport _ \"unsafe\"\n\n//go:linkname sdpa github.com/mhalab/mhalab/mhalib.ScaledDotProductAttention\nfunc sdpa()\n",
			[]string{"x.go:5: //go:linkname"}},
		// cgo compiles the preamble with the grader's rights, outside the sandbox: an
		// #include of a teacher's file would show it in the compiler's messages.
		{"cgo", 5, "package sdpa\n\n// #include \"/home/teacher/secret.txt\"\nimport \"C\"\n",
			[]string{"x.go:4: imports C: cgo"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e, _ := lessons.Lookup(c.exercise)
			got := checkImports(e, map[string][]byte{"x.go": []byte(c.src)})
			if len(got) != len(c.want) && !(len(c.want) > 0 && len(got) == 1) {
				t.Fatalf("problems %q, want %d matching %q", got, len(c.want), c.want)
			}
			joined := strings.Join(got, "\n")
			for _, w := range c.want {
				if !strings.Contains(joined, w) {
					t.Errorf("problems %q lack %q", got, w)
				}
			}
			if len(c.want) == 0 && len(got) > 0 {
				t.Errorf("refused an allowed file: %q", got)
			}
		})
	}
}
