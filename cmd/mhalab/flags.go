package main

import (
	"errors"
	"flag"
	"fmt"
	"io"

	"github.com/dustin/go-humanize"

	"github.com/mhalab/mhalab/internal/cli"
)

// The flag plumbing the commands' parse functions share (parse.go).

// defaultMaxMemory is the default of --max-memory: an explicit limit, the same on every
// machine, instead of one read from the machine's current load.
const defaultMaxMemory = 8 << 30

// bytesValue is a flag holding a number of bytes: "8GiB", "512 MiB", "2e9", "1000000".
type bytesValue struct{ p *uint64 }

func (b bytesValue) String() string {
	if b.p == nil {
		return "0 B"
	}
	return humanize.IBytes(*b.p)
}

func (b bytesValue) Set(s string) error {
	n, err := humanize.ParseBytes(s)
	if err != nil {
		return fmt.Errorf("want a size such as 8GiB or 512MiB")
	}
	*b.p = n
	return nil
}

// maxMemoryVar defines --max-memory on fs, stored in p.
func maxMemoryVar(fs *flag.FlagSet, p *uint64, what string) {
	*p = defaultMaxMemory
	fs.Var(bytesValue{p}, "max-memory", "refuse to start when "+what+" would need more memory than this (e.g. 8GiB, 512MiB)")
}

// given returns the flags given on the command line.
func given(fs *flag.FlagSet) cli.Given {
	g := cli.Given{}
	fs.Visit(func(f *flag.Flag) { g[f.Name] = true })
	return g
}

// parseFlagsAndArgs parses flags placed before or after the positional arguments (so that
// `mhalab embed "a b" --json` works) and returns the positional arguments; "--" ends the flags.
func parseFlagsAndArgs(fs *flag.FlagSet, c command, args []string, stdout io.Writer) ([]string, error) {
	var positional []string
	for {
		if err := parseFlagsAllowArgs(fs, c, args, stdout); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return positional, nil
		}
		if len(args) > len(rest) && args[len(args)-len(rest)-1] == "--" {
			return append(positional, rest...), nil
		}
		positional = append(positional, rest[0])
		args = rest[1:]
	}
}

// parseFlagsAllowArgs is parseFlags without the refusal of positional arguments.
func parseFlagsAllowArgs(fs *flag.FlagSet, c command, args []string, stdout io.Writer) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return parseFlags(fs, c, []string{"-h"}, stdout) // prints the help, returns ErrHelp
		}
		return &cli.UsageError{Msg: err.Error()}
	}
	return nil
}
