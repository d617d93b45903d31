package backends

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/mhalab/mhalab/internal/cli"
	"github.com/mhalab/mhalab/xla"
)

func TestRunPrintsEveryBackendAndTheDefault(t *testing.T) {
	var out, errs bytes.Buffer
	if err := (Options{}).Run(context.Background(), cli.IO{Out: &out, Err: &errs}); err != nil {
		t.Fatal(err)
	}
	for _, info := range xla.Available() {
		if !strings.Contains(out.String(), "\n"+info.Name+" ") {
			t.Errorf("no row for %s in:\n%s", info.Name, out.String())
		}
	}
	if !strings.HasPrefix(out.String(), "BACKEND   AVAILABLE") || !strings.Contains(out.String(), "\ndefault (no --backend): ") || errs.Len() != 0 {
		t.Errorf("stdout:\n%s\nstderr %q", out.String(), errs.String())
	}
}

func TestPrintSaysWhyNot(t *testing.T) {
	var out bytes.Buffer
	Print(&out, []xla.BackendInfo{
		{Name: "go", Available: true, Devices: 1, Reason: "pure Go"},
		{Name: "xla:cuda", Reason: "no CUDA plugin"},
	})
	want := "BACKEND   AVAILABLE  PJRT API  DEVICES  PLUGIN / NOTE\n" +
		"go        yes        -         1        pure Go\n" +
		"xla:cuda  no         -         -        no CUDA plugin\n"
	if out.String() != want {
		t.Errorf("got:\n%s\nwant:\n%s", out.String(), want)
	}
}
