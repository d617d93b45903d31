package cli

import "github.com/mhalab/mhalab/xla"

// BackendHelp is the help text of every command's --backend flag.
const BackendHelp = `backend: go, xla:cpu or xla:cuda (default: $GOMLX_BACKEND, else xla:cpu when its plugin loads, else go)`

// CheckBackend returns a *UsageError when spec is not a backend name ("" is the default): a
// mistake on the command line, reported before anything is read or loaded.
func CheckBackend(spec string) error {
	if err := xla.CheckSpec(spec); err != nil {
		return &UsageError{Msg: err.Error()}
	}
	return nil
}
