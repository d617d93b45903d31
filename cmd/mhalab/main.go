// Command mhalab runs, checks and measures multi-head attention built with mhalib.
//
//	mhalab backends                          which backends this machine has
//	mhalab demo [--backend B] [--runs N]     one MHA forward pass, checked and timed
//
// Run "mhalab help" for every subcommand. Exit status: 0 ok, 1 failure, 2 bad usage.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"text/tabwriter"

	"github.com/mhalab/mhalab/mhalib"
)

// command is one subcommand. A subcommand lives in its own file and adds itself to commands
// in that file's init (see backends.go).
type command struct {
	name    string
	args    string // arguments synopsis, e.g. "[--backend B] [--runs N]"
	summary string // one line
	// run executes the subcommand; a *usageError makes main print usage and exit 2.
	run func(args []string, stdout, stderr io.Writer) error
}

var commands = map[string]command{}

func register(c command) {
	if _, dup := commands[c.name]; dup {
		panic(fmt.Errorf("mhalab: subcommand %q registered twice", c.name))
	}
	commands[c.name] = c
}

// usageError is a command-line mistake: the caller prints usage and exits 2.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: mhalab <command> [flags]")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "commands:")
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, n := range names {
		c := commands[n]
		fmt.Fprintf(tw, "  %s %s\t%s\n", c.name, c.args, c.summary)
	}
	_ = tw.Flush()
	fmt.Fprintln(w)
	fmt.Fprintln(w, `Run "mhalab <command> -h" for its flags. Backends: go, xla:cpu, xla:cuda (default: $GOMLX_BACKEND,`)
	fmt.Fprintln(w, "else xla:cpu when its plugin loads, else go).")
}

// run dispatches args (without the program name) and returns the exit status.
func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		usage(stderr)
		return 2
	}
	name := args[0]
	if name == "help" || name == "-h" || name == "--help" || name == "-help" {
		usage(stdout)
		return 0
	}
	c, ok := commands[name]
	if !ok {
		fmt.Fprintf(stderr, "mhalab: unknown command %q\n\n", name)
		usage(stderr)
		return 2
	}
	err := c.run(args[1:], stdout, stderr)
	var ue *usageError
	switch {
	case err == nil:
		return 0
	case errors.Is(err, flag.ErrHelp):
		return 0
	case errors.As(err, &ue):
		fmt.Fprintf(stderr, "mhalab %s: %v\n", name, err)
		fmt.Fprintf(stderr, "usage: mhalab %s %s\n", c.name, c.args)
		fmt.Fprintf(stderr, "Run \"mhalab %s -h\" for its flags.\n", c.name)
		return 2
	default:
		fmt.Fprintf(stderr, "mhalab %s: %v\n", name, err)
		return 1
	}
}

// newFlagSet returns a silent flag set for a subcommand: parseFlags reports its errors.
func newFlagSet(name string) *flag.FlagSet {
	fs := flag.NewFlagSet("mhalab "+name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	return fs
}

// parseFlags parses args; -h prints the flags to stdout and returns flag.ErrHelp, a bad flag
// or a stray argument returns a *usageError.
func parseFlags(fs *flag.FlagSet, c command, args []string, stdout io.Writer) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprintf(stdout, "usage: mhalab %s %s\n\n%s\n", c.name, c.args, c.summary)
			numFlags := 0
			fs.VisitAll(func(*flag.Flag) { numFlags++ })
			if numFlags > 0 {
				fmt.Fprintf(stdout, "\nflags:\n")
				fs.SetOutput(stdout)
				fs.PrintDefaults()
			}
			return flag.ErrHelp
		}
		return &usageError{err.Error()}
	}
	if fs.NArg() > 0 {
		return &usageError{fmt.Sprintf("unexpected argument %q", fs.Arg(0))}
	}
	return nil
}

func main() {
	mhalib.InstallDotGeneralGradient() // DotGeneral's gradient as matrix products (mhalib/dotgrad.go)
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}
