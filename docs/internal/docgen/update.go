package docgen

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// Update rewrites every generated part of the docs under root: ```go blocks from the code they
// name, ```console blocks from their commands' output, generated regions from their generators.
// A console block whose model is not set up is left as it is (said on log).
func Update(root string, log io.Writer) error {
	files, err := DocFiles(root)
	if err != nil {
		return err
	}
	for _, file := range files {
		path := filepath.Join(root, file)
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		text := string(data)
		var edits []Block
		for _, b := range ParseBlocks(file, text) {
			switch b.Lang {
			case "go":
				if b.Body, err = CodeFor(root, b.Marker); err != nil {
					return fmt.Errorf("%s: %w", b.Where(), err)
				}
			case "console":
				opts, err := ParseConsoleMarker(b.Marker)
				if err != nil {
					return fmt.Errorf("%s: %w", b.Where(), err)
				}
				if opts.Needs != "" && !ModelPresent(opts.Needs) {
					fmt.Fprintf(log, "%s: left as it is: model %s is not set up (scripts/setup.sh --only %s)\n", b.Where(), opts.Needs, opts.Needs)
					continue
				}
				if b.Body, err = RunConsole(root, Commands(b.Body)); err != nil {
					return fmt.Errorf("%s: %w", b.Where(), err)
				}
			default:
				continue
			}
			edits = append(edits, b)
		}
		out, err := Regenerate(root, file, Replace(text, edits))
		if err != nil {
			return err
		}
		if out != text {
			if err := os.WriteFile(path, []byte(out), 0o644); err != nil {
				return err
			}
			fmt.Fprintf(log, "wrote %s\n", file)
		}
	}
	return nil
}
