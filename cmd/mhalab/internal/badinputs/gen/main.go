// Command gen rewrites cmd/mhalab/BAD_INPUTS.md: it builds mhalab, runs it on every bad input
// of package badinputs (in cmd/mhalab, where the cases' paths are relative to) and writes the
// table. Run by go generate ./cmd/mhalab; TestBadInputs checks the file against its own runs.
package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/mhalab/mhalab/cmd/mhalab/internal/badinputs"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "badinputs/gen:", err)
		os.Exit(1)
	}
}

func run() error {
	if _, err := os.Stat("main.go"); err != nil {
		return errors.New("run in cmd/mhalab (go generate ./cmd/mhalab does)")
	}
	tmp, err := os.MkdirTemp("", "mhalab-badinputs-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	bin := filepath.Join(tmp, "mhalab")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		return fmt.Errorf("go build: %v\n%s", err, out)
	}
	var rows []string
	for _, c := range badinputs.Cases() {
		cmd := exec.Command(bin, c.Args...)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		code := 0
		if err := cmd.Run(); err != nil {
			var exit *exec.ExitError
			if !errors.As(err, &exit) {
				return fmt.Errorf("mhalab %q: %v", c.Args, err)
			}
			code = exit.ExitCode()
		}
		rows = append(rows, badinputs.Row(c.Args, code, stderr.String()))
	}
	if err := os.WriteFile(badinputs.File, []byte(badinputs.Doc(rows)), 0o644); err != nil {
		return err
	}
	fmt.Printf("wrote %s: %d bad inputs\n", badinputs.File, len(rows))
	return nil
}
