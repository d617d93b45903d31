package fastgo

import (
	"fmt"
	"reflect"
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/gomlx/gomlx/backends/simplego"
)

// GoMLXVersion is the only version of github.com/gomlx/gomlx this package was written and
// checked against: it reaches into that version's internals (see the package doc, "On a GoMLX
// upgrade"), so with any other version it installs nothing.
const GoMLXVersion = "v0.26.0"

// gomlxModule is the module whose version is checked.
const gomlxModule = "github.com/gomlx/gomlx"

// linkedGoMLXVersion returns the version of github.com/gomlx/gomlx this program was built with.
// A program's build information lists it among the main module's dependencies (a replaced
// module counts with its replacement's version: "(devel)" for a directory). A test binary's
// build information has no dependencies (go test does not record them, Go 1.26), so then the
// version is read from the source path the binary records for a GoMLX function:
// …/github.com/gomlx/gomlx@v0.26.0/backends/simplego/… (module cache, or -trimpath's
// module@version paths). An unexported variable, so that an internal test can inject another
// version.
var linkedGoMLXVersion = func() (string, error) {
	info, ok := debug.ReadBuildInfo()
	if ok {
		for _, m := range append([]*debug.Module{&info.Main}, info.Deps...) {
			if m.Path != gomlxModule {
				continue
			}
			if m.Replace != nil {
				return m.Replace.Version, nil
			}
			return m.Version, nil
		}
	}
	pc := reflect.ValueOf(simplego.New).Pointer()
	file, _ := runtime.FuncForPC(pc).FileLine(pc)
	if _, rest, found := strings.Cut(file, gomlxModule+"@"); found {
		if version, _, found := strings.Cut(rest, "/"); found {
			return version, nil
		}
	}
	return "", fmt.Errorf("fastgo: neither this program's build information nor its source paths (%s) name the version of %s", file, gomlxModule)
}

// checkVersion decides whether to install: nil when GoMLX is GoMLXVersion or env (the value of
// MHALAB_FASTGO) is "force"; otherwise the reason, one line.
func checkVersion(version string, readErr error, env string) error {
	if env == "force" {
		return nil
	}
	if readErr != nil {
		return fmt.Errorf("%w; installed nothing (%s=force installs it anyway)", readErr, EnvVar)
	}
	if version != GoMLXVersion {
		return fmt.Errorf("fastgo: this program is built with %s %s, fastgo is written for %s only; installed nothing, GoMLX's own kernels run (%s=force installs it anyway)",
			gomlxModule, version, GoMLXVersion, EnvVar)
	}
	return nil
}

// versionDecision is init's decision, for the environment value env of MHALAB_FASTGO.
func versionDecision(env string) error {
	version, err := linkedGoMLXVersion()
	return checkVersion(version, err, env)
}
