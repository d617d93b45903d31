package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/debug"
	"strings"
	"syscall"
	"unicode/utf8"

	"github.com/mhalab/mhalab/internal/cli"
)

// command is one row of the table in main.go.
type command struct {
	name    string
	args    string // synopsis of the arguments, e.g. "[--backend B] [--runs N]"
	summary string // one sentence
	// parse fills the command's options from its arguments (without "mhalab <name>"); -h
	// prints the command's help to stdout and returns flag.ErrHelp, a bad flag a
	// *cli.UsageError.
	parse func(c command, args []string, stdout io.Writer) (runner, error)
	// interruptible commands stop cleanly when their context ends: Ctrl-C (SIGINT) or SIGTERM
	// cancels it (a second Ctrl-C kills). The others are killed by Ctrl-C, as any program.
	interruptible bool
}

// runner is a command's options, ready to run: func (o Options) Run(ctx, io) in the command's
// package under internal/commands.
type runner interface {
	Run(ctx context.Context, io cli.IO) error
}

// exitInterrupted is the exit status of a command stopped by Ctrl-C: 128 + SIGINT, what a shell
// reports for a program the signal killed.
const exitInterrupted = 130

// helpWidth is the width help text is wrapped to.
const helpWidth = 100

// debugEnv set to 1 makes a recovered panic print its stack.
const debugEnv = "MHALAB_DEBUG"

func lookup(name string) (command, bool) {
	for _, c := range commands {
		if c.name == name {
			return c, true
		}
	}
	return command{}, false
}

// usage writes the list of commands.
func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: mhalab <command> [flags]")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "commands:")
	width := 0
	for _, c := range commands {
		width = max(width, len(c.name))
	}
	for _, c := range commands {
		writeWrapped(w, fmt.Sprintf("  %-*s  ", width, c.name), c.summary)
	}
	fmt.Fprintln(w)
	writeWrapped(w, "", `Run "mhalab <command> -h" for its flags. Backends: go, xla:cpu, xla:cuda `+
		`(default: $GOMLX_BACKEND, else xla:cpu when its plugin loads, else go).`)
	writeWrapped(w, "", "Exit status: 0 success, 1 failure or a value that cannot be run (a size too large, "+
		"zero or negative; a malformed file), 2 bad usage (unknown command or flag, a missing or malformed flag value).")
}

// run dispatches args (without the program name) with empty standard input and no signal
// handling (what the tests call) and returns the exit status.
func run(args []string, stdout, stderr io.Writer) int {
	return runIO(args, cli.IO{Out: stdout, Err: stderr}, false)
}

// runIO dispatches args (without the program name) and returns the exit status. With signals,
// Ctrl-C and SIGTERM cancel an interruptible command's context. A panic in the command becomes
// a one-line internal error (exit 1).
func runIO(args []string, streams cli.IO, signals bool) (code int) {
	stdout, stderr := streams.Out, streams.Err
	if len(args) == 0 {
		usage(stderr)
		return 2
	}
	name := args[0]
	switch name {
	case "help", "-h", "--help", "-help":
		usage(stdout)
		return 0
	}
	c, ok := lookup(name)
	if !ok {
		fmt.Fprintf(stderr, "mhalab: unknown command %q\n", name)
		fmt.Fprintln(stderr, `Run "mhalab help" for the list of commands.`)
		return 2
	}
	defer func() {
		if r := recover(); r != nil {
			fmt.Fprintf(stderr, "mhalab %s: internal error (a bug in mhalab): %s\n", name, oneLine(fmt.Sprint(r)))
			if os.Getenv(debugEnv) == "1" {
				stderr.Write(debug.Stack())
			} else {
				fmt.Fprintf(stderr, "(set %s=1 for the stack; please report it with the command line)\n", debugEnv)
			}
			code = 1
		}
	}()
	ctx := context.Background()
	if signals && c.interruptible {
		var stop context.CancelFunc
		ctx, stop = signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
		defer stop()
		go func() {
			<-ctx.Done()
			stop() // the next Ctrl-C kills, as it would without this handler
		}()
	}
	r, err := c.parse(c, args[1:], stdout)
	if err == nil {
		err = r.Run(ctx, streams)
	}
	var ue *cli.UsageError
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
		return 0
	case errors.Is(err, context.Canceled) && ctx.Err() != nil:
		fmt.Fprintf(stderr, "mhalab %s: interrupted\n", name)
		return exitInterrupted
	case errors.As(err, &ue):
		fmt.Fprintf(stderr, "mhalab %s: %s\n", name, oneLine(err.Error()))
		fmt.Fprintf(stderr, "Run \"mhalab %s -h\" for usage.\n", name)
		return 2
	default:
		fmt.Fprintf(stderr, "mhalab %s: %s\n", name, oneLine(err.Error()))
		return 1
	}
}

// oneLine joins the lines of a message with " | ".
func oneLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	for i := range lines {
		lines[i] = strings.TrimSpace(lines[i])
	}
	return strings.Join(lines, " | ")
}

// newFlagSet returns a silent flag set for a command: parseFlags reports its errors.
func newFlagSet(name string) *flag.FlagSet {
	fs := flag.NewFlagSet("mhalab "+name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	return fs
}

// parseFlags parses args; -h prints the command's help to stdout and returns flag.ErrHelp; a
// bad flag or a stray argument returns a *usageError.
func parseFlags(fs *flag.FlagSet, c command, args []string, stdout io.Writer) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			commandHelp(stdout, fs, c)
			return flag.ErrHelp
		}
		return &cli.UsageError{Msg: err.Error()}
	}
	if fs.NArg() > 0 {
		return cli.Usagef("unexpected argument %q", fs.Arg(0))
	}
	return nil
}

// commandHelp writes the synopsis, summary and flags of c, wrapped to helpWidth columns.
func commandHelp(w io.Writer, fs *flag.FlagSet, c command) {
	writeWrapped(w, "usage: mhalab "+c.name+" ", c.args)
	fmt.Fprintln(w)
	writeWrapped(w, "", c.summary)
	first := true
	fs.VisitAll(func(f *flag.Flag) {
		if first {
			fmt.Fprintf(w, "\nflags:\n")
			first = false
		}
		kind, text := flag.UnquoteUsage(f)
		line := "  --" + f.Name
		if kind != "" {
			line += " " + kind
		}
		fmt.Fprintln(w, line)
		if !isZeroDefault(f) {
			text += fmt.Sprintf(" (default %s)", f.DefValue)
		}
		writeWrapped(w, "        ", text)
	})
}

// isZeroDefault reports whether f's default is its type's zero value (not worth printing).
func isZeroDefault(f *flag.Flag) bool {
	switch f.DefValue {
	case "", "0", "false", "0s":
		return true
	}
	return false
}

// writeWrapped writes prefix and text, wrapped at word boundaries to helpWidth columns, the
// lines after the first indented by as many spaces as prefix is wide.
func writeWrapped(w io.Writer, prefix, text string) {
	indent := strings.Repeat(" ", utf8.RuneCountInString(prefix))
	line := prefix
	empty := true // line holds no word yet
	for _, word := range strings.Fields(text) {
		if !empty && utf8.RuneCountInString(line)+1+utf8.RuneCountInString(word) > helpWidth {
			fmt.Fprintln(w, line)
			line, empty = indent, true
		}
		if !empty {
			line += " "
		}
		line += word
		empty = false
	}
	fmt.Fprintln(w, strings.TrimRight(line, " "))
}
