package lessons

import "strings"

// ModulePath is the path of mhalab's Go module. A graded file may use its packages (mhalib, the
// library this course builds; mhatest, the graders' reference; torchio; ...) only for the names
// an exercise allows (Allowed): the rest is what the exercises ask the student to write.
const ModulePath = "github.com/mhalab/mhalab"

// Restriction is a package whose import a graded file is refused, and why.
type Restriction struct {
	Import string // an import path; its subpackages are refused too
	Why    string // says what to do instead
}

// forbiddenEverywhere holds what no exercise may import besides this module's packages.
var forbiddenEverywhere = []Restriction{
	{"github.com/gomlx/gomlx/pkg/ml/layers", "GoMLX's layers (Dense, MultiHeadAttention, ...) compute what the exercises ask you to write, with GoMLX's own conventions"},
}

// forbidden holds the extra restrictions of one exercise, by folder.
var forbidden = map[string][]Restriction{
	"02_xavier": {{"github.com/gomlx/gomlx/pkg/ml/context/initializers", "GoMLX's initializers have Xavier built in: the exercise is to derive its bound and draw the numbers yourself"}},
}

// allowed holds the names of this module's packages that an exercise may use, as
// "package.Name": the pieces earlier exercises had the student write.
var allowed = map[string][]string{
	"04_uneven_heads": {"mhalib.ScaledDotProductAttention"},
	"07_mha":          {"mhalib.SplitHeads", "mhalib.MergeHeads", "mhalib.ScaledDotProductAttention"},
	"10_statedict":    {"torchio.ReadFile", "torchio.Parse", "torchio.File"},
}

// Forbidden returns the packages (besides this module's) that the graded files of e may not
// import.
func (e Exercise) Forbidden() []Restriction {
	return append(append([]Restriction{}, forbiddenEverywhere...), forbidden[e.Dir]...)
}

// Allowed returns the names of this module's packages that the graded files of e may use, as
// "package.Name" (for example "mhalib.SplitHeads"); every other name of the module is refused.
func (e Exercise) Allowed() []string { return append([]string{}, allowed[e.Dir]...) }

// AllowedIn returns the names e may use from the package with the given name ("mhalib"),
// without the package prefix.
func (e Exercise) AllowedIn(pkg string) []string {
	var out []string
	for _, a := range allowed[e.Dir] {
		if p, name, ok := strings.Cut(a, "."); ok && p == pkg {
			out = append(out, name)
		}
	}
	return out
}
