package cli

import (
	"fmt"
	"os"

	"github.com/mhalab/mhalab/internal/atomicfile"
)

// Safe by default: no command destroys a user's file. A command that writes a file checks it
// before reading or computing anything (CheckOutput): the output must not be one of the
// command's input files — the same path, another spelling of it, a symbolic link or a hard link
// to it (os.SameFile) — nor a folder. Every file is then written whole or not at all
// (internal/atomicfile: a temporary file in the same folder, renamed over the old one).

// FileArg is a file named on the command line: the flag that named it ("--out") and its path.
type FileArg struct{ Flag, Path string }

// CheckOutput returns one line, before anything is read or computed, when out cannot be written
// without harm: it is the same file as one of inputs, or a folder, or (with needFolder; a command
// that creates the folder passes false) its folder does not exist. An output or an input that
// does not exist yet is fine here (reading the input reports it).
func CheckOutput(out FileArg, needFolder bool, inputs ...FileArg) error {
	if out.Path == "" {
		return nil
	}
	if needFolder {
		if _, err := atomicfile.Resolve(out.Path); err != nil {
			return fmt.Errorf("%s %s: %v", out.Flag, out.Path, err)
		}
	}
	st, err := os.Stat(out.Path)
	if err != nil {
		return nil // absent, or unreadable: the write says why
	}
	if st.IsDir() {
		return fmt.Errorf("%s %s is a folder: give a file name", out.Flag, out.Path)
	}
	for _, in := range inputs {
		if in.Path == "" {
			continue
		}
		if ist, err := os.Stat(in.Path); err == nil && os.SameFile(st, ist) {
			return fmt.Errorf("%s %s is the same file as %s %s: refusing to overwrite an input (give %s another file)",
				out.Flag, out.Path, in.Flag, in.Path, out.Flag)
		}
	}
	return nil
}
