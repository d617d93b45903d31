package minilm_test

import (
	"fmt"
	"log"

	"github.com/gomlx/gomlx/backends"

	"github.com/mhalab/mhalab/models/minilm"
	"github.com/mhalab/mhalab/models/probe"
	"github.com/mhalab/mhalab/xla"
)

// Sentence similarity with the model that scripts/setup.sh --only minilm installs. (Compiled,
// not run by go test: it needs the model files; the tests check the same numbers.)
func ExampleModel_Embed() {
	m, err := minilm.Load(must(minilm.DefaultDir()))
	if err != nil {
		log.Fatal(err) // e.g. "model file …/model.safetensors is missing (run scripts/setup.sh --only minilm, …)"
	}
	backend, _, err := xla.NewWithReason("") // $GOMLX_BACKEND, else XLA CPU, else pure Go
	if err != nil {
		log.Fatal(err)
	}
	defer backend.Finalize()
	encs, _, err := m.Encode([]string{"A man is eating food.", "A man is eating a piece of bread."}, minilm.DefaultMaxTokens)
	if err != nil {
		log.Fatal(err)
	}
	embs, err := m.Embed(backend, encs, 32) // [2][384], unit length
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%q\ncos = %.4f\n", encs[0].Tokens, minilm.Cosine(embs[0], embs[1]))
}

// The attention weights of every layer and head for one sentence.
func ExampleModel_Attention() {
	m, backend := modelOnGo()
	encs, _, err := m.Encode([]string{"The cat sat on the mat because it was tired."}, 0)
	if err != nil {
		log.Fatal(err)
	}
	att, err := m.Attention(backend, encs[0]) // [6][12][13][13]
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("it → cat at layer 5, head 11: %.2f\n", att[5][11][8][2])
}

func must(dir string, err error) string {
	if err != nil {
		log.Fatal(err)
	}
	return dir
}

// Reading and ablating heads: the similarity of two sentences with heads 5.11 and 4.2
// zero-ablated, and head 5.11's output at token 8 of the first sentence (before the ablation
// replaced it: a plain traced run).
func ExampleModel_Probe() {
	m, backend := modelOnGo() // minilm.Load(dir), xla.NewWithReason("go"), as above
	encs, _, err := m.Encode([]string{"The cat sat on the mat because it was tired.", "The tired cat slept."}, 0)
	if err != nil {
		log.Fatal(err)
	}
	plain, err := m.Probe(backend, encs, minilm.ProbeOptions{Trace: true})
	if err != nil {
		log.Fatal(err)
	}
	abl := probe.Ablation{Heads: []probe.Head{{Layer: 5, Head: 11}, {Layer: 4, Head: 2}}, Mode: probe.Zero}
	cut, err := m.Probe(backend, encs, minilm.ProbeOptions{Ablation: abl})
	if err != nil {
		log.Fatal(err)
	}
	z := plain.Heads[5].Row(0, 11, 8) // [dk = 32]: head 11 of layer 5 at query token 8 ("it")
	fmt.Printf("cos %.4f → %.4f with %s; |z| has %d numbers\n",
		minilm.Cosine(plain.Embeddings[0], plain.Embeddings[1]), minilm.Cosine(cut.Embeddings[0], cut.Embeddings[1]), abl, len(z))
}

// modelOnGo loads the installed model and the pure-Go backend.
func modelOnGo() (*minilm.Model, backends.Backend) {
	m, err := minilm.Load(must(minilm.DefaultDir()))
	if err != nil {
		log.Fatal(err)
	}
	backend, _, err := xla.NewWithReason("go")
	if err != nil {
		log.Fatal(err)
	}
	return m, backend
}
