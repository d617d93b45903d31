package lessons

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/mhalab/mhalab/internal/cli"
	"github.com/mhalab/mhalab/internal/cli/clitest"
	"github.com/mhalab/mhalab/internal/lessonrun"
)

// root is the repository, from this package's folder.
const root = "../../.."

func options(sub string, args ...string) Options {
	return Options{Sub: sub, Args: args, Options: lessonrun.Options{Root: root, Backend: "go", Timeout: time.Minute, CompileTimeout: time.Minute}}
}

func TestRunRefusesBadFlags(t *testing.T) {
	for _, c := range []struct {
		o     Options
		want  string
		usage bool
	}{
		{Options{Sub: "check"}, "--timeout, --compile-timeout and --interval must be positive", true},
		{func() Options { o := options("watch"); return o }(), "--interval must be positive", true},
		{func() Options { o := options("check"); o.MemoryFlag = 1 << 20; return o }(), "--memory 1.0 MiB: too small", false},
		{options("bogus"), "bogus", true},
		{options("hint"), "", true},
		{func() Options { o := options("check"); o.Backend = "tpu"; return o }(), "tpu", true},
	} {
		var out bytes.Buffer
		err := c.o.Run(context.Background(), cli.IO{Out: &out, Err: &out})
		clitest.Refused(t, fmt.Sprintf("%+v", c.o), err, out.String(), c.want, c.usage)
	}
}

func TestRunHintWritesToIOOut(t *testing.T) {
	var out, errs bytes.Buffer
	if err := options("hint", "1").Run(context.Background(), cli.IO{Out: &out, Err: &errs}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "?") {
		t.Errorf("hint 1: stdout %q, stderr %q; want the guiding questions", out.String(), errs.String())
	}
}
