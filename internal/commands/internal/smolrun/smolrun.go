// Package smolrun is what `mhalab generate` and `mhalab chat` share: their common flags, the
// choice between greedy decoding and sampling, and a session of SmolLM2 on the chosen backend.
package smolrun

import (
	"errors"
	"fmt"
	"io"

	"github.com/mhalab/mhalab/internal/cli"
	"github.com/mhalab/mhalab/models/smollm2"
)

// Options are the flags generate and chat share.
type Options struct {
	Backend      string // "" = the default backend (xla.NewWithReason)
	Model        string // GGUF file; "" = the one the setup step installs (smollm2.OpenModel)
	MaxNewTokens int    // per answer, for chat
	Greedy       bool   // --greedy (generate only): the default, excludes --temperature
	// Sampling holds --temperature, --top-k, --top-p and --seed; they count only when
	// --temperature was given (Given["temperature"]), else decoding is greedy.
	Sampling smollm2.Sampling
	Given    cli.Given
}

// ResolveSampling returns the decoding o asks for: the sampling flags need --temperature,
// --greedy excludes it, --temperature 0 is refused. An unknown --backend is a usage error.
func (o Options) ResolveSampling() (smollm2.Sampling, error) {
	s, set := o.Sampling, o.Given
	if o.Greedy && set["temperature"] {
		return s, errors.New("--greedy and --temperature exclude each other")
	}
	// --temperature 0 is refused rather than read as greedy: the sampling flags (--top-k, --top-p,
	// --seed) need --temperature, and at T = 0 they would be ignored without a word.
	if set["temperature"] && s.Temperature == 0 {
		return s, errors.New("--temperature 0: want T > 0 (greedy decoding is the default: leave out --temperature, or give --greedy)")
	}
	if !set["temperature"] {
		for _, name := range []string{"top-k", "top-p", "seed"} {
			if set[name] {
				return s, fmt.Errorf("--%s needs --temperature (greedy decoding is the default)", name)
			}
		}
		s.Greedy = true
	}
	if err := s.Check(); err != nil {
		return s, fmt.Errorf("--%w", err)
	}
	if err := cli.CheckBackend(o.Backend); err != nil {
		return s, err
	}
	return s, nil
}

// OpenModel checks --max-new-tokens and the sampling, then opens the model file (--model, or
// the default one): every error is one line saying how to fix it.
func (o Options) OpenModel(sampling smollm2.Sampling) (*smollm2.Model, error) {
	if o.MaxNewTokens < 1 {
		return nil, fmt.Errorf("--max-new-tokens %d: want ≥ 1", o.MaxNewTokens)
	}
	if err := sampling.Check(); err != nil {
		return nil, err
	}
	return smollm2.OpenModel(o.Model)
}

// OpenSession makes the backend (saying which on stderr), a runner of m on it and a session
// with a KV cache of capacity positions; closeSession frees all three.
func OpenSession(spec string, m *smollm2.Model, capacity int, stderr io.Writer) (s *smollm2.Session, backendName string, closeSession func(), err error) {
	backend, err := cli.NewBackend(spec, stderr)
	if err != nil {
		return nil, "", nil, err
	}
	r, err := m.NewRunner(backend)
	if err != nil {
		backend.Finalize()
		return nil, "", nil, err
	}
	s, err = r.NewSession(capacity)
	if err != nil {
		r.Finalize()
		backend.Finalize()
		return nil, "", nil, err
	}
	return s, backend.Name(), func() {
		s.Finalize()
		r.Finalize()
		backend.Finalize()
	}, nil
}
