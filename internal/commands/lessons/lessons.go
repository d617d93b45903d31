// Package lessons is `mhalab lessons`: the classroom exercises of lessons/ — progress, check,
// hints, watch mode; verify and grade for teachers. internal/lessonrun runs them; this package
// checks the flags and hands it the command's streams.
package lessons

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/dustin/go-humanize"

	"github.com/mhalab/mhalab/internal/cli"
	"github.com/mhalab/mhalab/internal/lessonrun"
)

// Options are the subcommand, its positional arguments and the flags of `mhalab lessons`.
type Options struct {
	Sub  string   // list (""), check, hint, watch, reset, solution, verify, grade, gradescope
	Args []string // the subcommand's positional arguments
	lessonrun.Options
	SeedValue  uint64    // --seed, used when Given["seed"]
	MemoryFlag uint64    // --memory in bytes (0: the sandbox's default)
	Given      cli.Given // which flags were given (seed)
}

// minMemory is the least --memory a program running GoMLX can live with.
const minMemory = 512 << 20

// Run checks the flags and runs the subcommand with io (reset reads its confirmation from
// io.In). ctx ends a check, watch, verify or grade early (Ctrl-C).
func (o Options) Run(ctx context.Context, io cli.IO) error {
	if o.Timeout <= 0 || o.CompileTimeout <= 0 || (o.Sub == "watch" && o.Interval <= 0) {
		return cli.Usagef("--timeout, --compile-timeout and --interval must be positive")
	}
	if o.Given["seed"] {
		o.Seed = strconv.FormatUint(o.SeedValue, 10)
	}
	o.Memory = int64(o.MemoryFlag)
	if o.Memory != 0 && o.Memory < minMemory {
		return fmt.Errorf("--memory %s: too small; a program running GoMLX needs at least 512 MiB of address space (the default is 4 GiB)", humanize.IBytes(o.MemoryFlag))
	}
	o.Stdin, o.Stdout, o.Stderr = io.In, io.Out, io.Err
	err := lessonrun.Run(ctx, o.Sub, o.Args, o.Options)
	var ue *lessonrun.UsageError
	if errors.As(err, &ue) {
		return cli.Usagef("%s", ue.Msg)
	}
	return err
}
