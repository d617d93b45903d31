package smollm2_test

import (
	"fmt"
	"log"

	"github.com/mhalab/mhalab/models/probe"
	"github.com/mhalab/mhalab/models/smollm2"
	"github.com/mhalab/mhalab/xla"
)

// Ablating heads of SmolLM2: the log-probability of " mat" after "The cat sat on the", with
// and without heads 3.2 and 20.0 mean-ablated (their means taken over the same batch).
// (Compiled, not run by go test: it needs the model; probe_test.go checks the same machinery.)
func ExampleRunner_Probe() {
	m, err := smollm2.OpenModel("") // the model scripts/setup.sh --only smollm2 installs
	if err != nil {
		log.Fatal(err)
	}
	backend, _, err := xla.NewWithReason("")
	if err != nil {
		log.Fatal(err)
	}
	r, err := m.NewRunner(backend)
	if err != nil {
		log.Fatal(err)
	}
	defer r.Finalize()
	ids := [][]int{m.Tokenizer.Encode("The cat sat on the mat")}
	plain, err := r.Probe(ids, smollm2.ProbeOptions{Trace: true}) // LogProbs[0][t] = log p(ids[t+1] | ids[0…t])
	if err != nil {
		log.Fatal(err)
	}
	means, err := probe.MeanHeads(plain.Trace, plain.Lengths, 1)
	if err != nil {
		log.Fatal(err)
	}
	abl := probe.Ablation{Heads: []probe.Head{{Layer: 3, Head: 2}, {Layer: 20, Head: 0}}, Mode: probe.Mean, Means: means}
	cut, err := r.Probe(ids, smollm2.ProbeOptions{Ablation: abl})
	if err != nil {
		log.Fatal(err)
	}
	n := len(ids[0])
	fmt.Printf("log p(mat) %.3f → %.3f with %s\n", plain.LogProbs[0][n-2], cut.LogProbs[0][n-2], abl)
}
