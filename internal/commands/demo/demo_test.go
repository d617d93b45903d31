package demo

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/gomlx/gomlx/backends"
	"github.com/mhalab/mhalab/internal/backendtest"
)

func TestDemoRunsOnEachBackend(t *testing.T) {
	backendtest.Run(t, func(t *testing.T, b backends.Backend) {
		var out bytes.Buffer
		cfg := Config{Batch: 2, Seq: 8, DModel: 16, Heads: 4, Runs: 3, Seed: 1}
		if err := Demo(context.Background(), &out, b, "test backend", cfg); err != nil {
			t.Fatalf("demo: %v\n%s", err, out.String())
		}
		for _, want := range []string{
			"backend:  test backend",
			"output:   (Float32)[2 8 16], attention weights (Float32)[2 4 8 8]",
			"check:    all 64 attention rows sum to 1",
			"median ",
		} {
			if !strings.Contains(out.String(), want) {
				t.Errorf("demo output lacks %q:\n%s", want, out.String())
			}
		}
	})
}
