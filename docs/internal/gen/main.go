// Gen rewrites the generated parts of README.md and docs/ (docs/docs.md): run by
// `go generate ./docs` (make docs), from the docs folder.
package main

import (
	"fmt"
	"os"

	"github.com/mhalab/mhalab/docs/internal/docgen"
)

func main() {
	if err := docgen.Update("..", os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "docs/internal/gen:", err)
		os.Exit(1)
	}
}
