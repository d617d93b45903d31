// Package docs holds mhalab's documentation (the Markdown files of this folder and the
// repository's README.md). It has no code: its tests execute the documentation.
//
//   - A ```go block is preceded by <!-- code: PATH --> (the whole file) or
//     <!-- code: PATH FUNC --> (one function, its doc comment included) and must equal it, so
//     every Go snippet is compiled and tested where it lives (an Example or a main package).
//   - A ```console block holds commands ("$ mhalab …") and their output. The test runs them and
//     compares; `make docs` (go generate ./docs) writes the output. Its marker says how much
//     of the output is stable: <!-- console --> (all of it), <!-- console: numbers vary -->
//     (timings: every number is masked), <!-- console: machine --> (only the exit status is
//     checked); "needs minilm" or "needs smollm2" skips it where the model is not set up
//     (outside CI).
//   - A ```sh block is checked, not run: each make target exists in the Makefile, each mhalab
//     subcommand and flag exists, each script and package path exists.
//   - docs/performance.md is generated from the bench reports in docs/bench/*.json.
//   - README.md states no number followed by × or ms outside generated blocks.
package docs

//go:generate go run ./internal/gen
