// Package commands is the home of mhalab's commands: each command is one package under it
// (internal/commands/demo, …/forward, …) with an options struct and
//
//	func (o Options) Run(ctx context.Context, io cli.IO) error
//
// Run checks the options, calls the libraries (mhalib, models, xla, torchio, bench, …), which
// return values, and prints them on io. cmd/mhalab only fills the options from the command line
// and maps the error to an exit status; nothing else imports a command (internal/archtest).
// What two commands share lives in internal/cli (every command) or internal/commands/internal
// (embed and attention; generate and chat).
package commands
