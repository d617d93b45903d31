package main

import (
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/mhalab/mhalab/fastgo"
	"github.com/mhalab/mhalab/xla"
)

func runBackends(c command, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet(c.name)
	if err := parseFlags(fs, c, args, stdout); err != nil {
		return err
	}
	printBackends(stdout, xla.Available())
	_, reason, err := xla.NewWithReason("")
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "\ndefault (no --backend): %s\n", reason)
	fmt.Fprintf(stdout, "go backend's kernels: %s\n", fastgo.Status())
	return nil
}

// printBackends writes one row per backend.
func printBackends(w io.Writer, infos []xla.BackendInfo) {
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
