// Package backends is `mhalab backends`: the backends of this machine (go, xla:cpu, xla:cuda),
// available or why not, and the one a command takes without --backend.
package backends

import (
	"context"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/mhalab/mhalab/fastgo"
	"github.com/mhalab/mhalab/internal/cli"
	"github.com/mhalab/mhalab/xla"
)

// Options are the flags of `mhalab backends` (none).
type Options struct{}

// Run prints one row per backend, then the default backend and why.
func (Options) Run(_ context.Context, io cli.IO) error {
	Print(io.Out, xla.Available())
	_, reason, err := cli.NewWithReason("")
	if err != nil {
		return err
	}
	fmt.Fprintf(io.Out, "\ndefault (no --backend): %s\n", reason)
	fmt.Fprintf(io.Out, "go backend's kernels: %s\n", fastgo.Status())
	return nil
}

// Print writes one row per backend.
func Print(w io.Writer, infos []xla.BackendInfo) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "BACKEND\tAVAILABLE\tPJRT API\tDEVICES\tPLUGIN / NOTE")
	for _, info := range infos {
		avail, pjrtVersion, devices := "no", "-", "-"
		if info.Available {
			avail, devices = "yes", fmt.Sprint(info.Devices)
		}
		if info.PJRTVersion != "" {
			pjrtVersion = info.PJRTVersion
		}
		detail := info.PluginPath
		switch {
		case !info.Available:
			detail = info.Reason
		case detail == "":
			detail = info.Reason
		case info.Reason != "":
			detail += " (" + info.Reason + ")"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", info.Name, avail, pjrtVersion, devices, detail)
	}
	_ = tw.Flush()
}
