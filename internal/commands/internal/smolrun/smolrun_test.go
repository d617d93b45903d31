package smolrun

import (
	"errors"
	"strings"
	"testing"

	"github.com/mhalab/mhalab/internal/cli"
	"github.com/mhalab/mhalab/models/smollm2"
)

func TestResolveSampling(t *testing.T) {
	sampling := smollm2.Sampling{Temperature: 0.7, TopK: 50, TopP: 1, Seed: 3}
	for _, c := range []struct {
		o      Options
		greedy bool   // the result is greedy
		want   string // the error, "" = none
	}{
		{Options{Sampling: sampling}, true, ""},
		{Options{Sampling: sampling, Given: cli.Given{"temperature": true}}, false, ""},
		{Options{Sampling: sampling, Given: cli.Given{"temperature": true}, Greedy: true}, false, "--greedy and --temperature exclude each other"},
		{Options{Sampling: smollm2.Sampling{TopP: 1}, Given: cli.Given{"temperature": true}}, false, "--temperature 0: want T > 0"},
		{Options{Sampling: sampling, Given: cli.Given{"top-p": true}}, false, "--top-p needs --temperature"},
		{Options{Sampling: smollm2.Sampling{Temperature: 1, TopP: 2}, Given: cli.Given{"temperature": true}}, false, "--top-p 2"},
		{Options{Sampling: sampling, Backend: "tpu"}, false, "tpu"},
	} {
		s, err := c.o.ResolveSampling()
		switch {
		case c.want == "" && (err != nil || s.Greedy != c.greedy):
			t.Errorf("%+v: %+v, %v; want greedy %v", c.o, s, err, c.greedy)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%+v: error %v, want %q", c.o, err, c.want)
		}
	}
	var ue *cli.UsageError
	if _, err := (Options{Backend: "tpu"}).ResolveSampling(); !errors.As(err, &ue) {
		t.Errorf("--backend tpu: %v, want a usage error", err)
	}
}
