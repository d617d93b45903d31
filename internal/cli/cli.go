// Package cli is what every mhalab command shares: the streams it runs with and the error that
// means "bad usage" (exit 2). A command lives in one package of its own with an options struct
// and
//
//	func (o Options) Run(ctx context.Context, io cli.IO) error
//
// cmd/mhalab only parses flags into the options and calls Run; the command prints, the packages
// it calls return values.
package cli

import (
	"fmt"
	"io"
)

// IO is what a command reads and writes: never os.Stdout or os.Stderr directly, so a test runs it
// with buffers.
type IO struct {
	In  io.Reader // standard input (chat reads it); nil reads as empty
	Out io.Writer // results (JSON, tables, generated text)
	Err io.Writer // progress, warnings
}

// UsageError is a command line that does not fit the synopsis (unknown flag, a value of the wrong
// type, a missing argument): the command exits 2 and points to -h.
type UsageError struct{ Msg string }

func (e *UsageError) Error() string { return e.Msg }

// Usagef returns a *UsageError with a formatted message.
func Usagef(format string, args ...any) error {
	return &UsageError{Msg: fmt.Sprintf(format, args...)}
}
