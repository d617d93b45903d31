package bench

import (
	"fmt"
	"io"
	"strings"
)

// commandLine returns the mhalab bench command that asks for cfg (before its defaults are
// filled in), for the report: a reader can run the same measurement again.
func (cfg Config) commandLine() string {
	args := []string{"mhalab", "bench"}
	if cfg.Quick {
		args = append(args, "--quick")
	}
	for _, f := range []struct {
		name   string
		values []string
	}{{"--backends", cfg.Backends}, {"--suites", cfg.Suites}, {"--groups", cfg.Groups}} {
		if len(f.values) > 0 {
			args = append(args, f.name, strings.Join(f.values, ","))
		}
	}
	if cfg.Budget != 0 {
		args = append(args, "--budget", cfg.Budget.String())
	}
	if cfg.Threads != 0 {
		args = append(args, "--threads", fmt.Sprint(cfg.Threads))
	}
	if cfg.TorchDevice != "" && cfg.TorchDevice != "cpu" {
		args = append(args, "--torch-device", cfg.TorchDevice)
	}
	return strings.Join(args, " ")
}

// RenderReport prints the report of an earlier run, read from its JSON file (--json), as the
// run printed it: machine, date, load, command and tables. The docs' performance page is made
// of these.
func RenderReport(w io.Writer, jsonPath string) error {
	rep, err := decodeReport(jsonPath)
	if err != nil {
		return err
	}
	if rep.Machine.Busy == "" {
		rep.Machine.Busy = busyWarning(rep) // reports written before the warning existed
	}
	printReport(w, rep)
	return nil
}
