package nb

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"slices"

	"github.com/mhalab/mhalab/models/probe"
)

// Helpers of notebooks 9 and 12 for testing what a head does: the pronoun sentences, the
// repeated random tokens, scores per (layer, head), and heads to ablate.

// Pronoun is one sentence of the pronoun test: "The cat chased the dogs because it was tired."
// Only one noun is singular, so "it" can only refer to that one (the Referent).
type Pronoun struct {
	Subject, Verb, Object string // "cat", "chased", "dogs"
	Referent, Other       string // the word "it" refers to and the other noun: "cat", "dogs"
}

// Prefix is the sentence up to and including "it": "The cat chased the dogs because it".
func (p Pronoun) Prefix() string {
	return fmt.Sprintf("The %s %s the %s because it", p.Subject, p.Verb, p.Object)
}

// Sentence is the whole sentence: Prefix() + " was tired.".
func (p Pronoun) Sentence() string { return p.Prefix() + " was tired." }

var (
	pronounNouns = []string{"cat", "dog", "bird", "horse", "rabbit", "goat", "duck", "frog"}
	pronounVerbs = []string{"chased", "followed", "watched", "pushed"}
)

// PronounTest returns n sentences (n even) in pairs with the same words, the referent swapped
// by grammatical number: "The cat chased the dogs because it …" (it = cat) and "The cats
// chased the dog because it …" (it = dog). Two different animals, drawn with the seed.
func PronounTest(n int, seed uint64) []Pronoun {
	rng := rand.New(rand.NewPCG(seed, seed))
	var out []Pronoun
	for len(out) < n {
		a, b := pronounNouns[rng.IntN(len(pronounNouns))], pronounNouns[rng.IntN(len(pronounNouns))]
		v := pronounVerbs[rng.IntN(len(pronounVerbs))]
		if a == b {
			continue
		}
		out = append(out, Pronoun{a, v, b + "s", a, b + "s"}, Pronoun{a + "s", v, b, b, a + "s"})
	}
	return out[:n]
}

// ReferentScores returns, per layer and head, the mean over the given sentences of
// w(it → referent) − w(it → other noun): att[layer] is [B, H, L, L] (probe.Trace.Attention),
// pos[b] = {it, referent, other}, the token positions in sentence b. It is 1 for a head that
// puts all the weight of "it" on its referent, −1 for one that puts it all on the other noun.
func ReferentScores(att []probe.Array, pos [][3]int, sentences []int) [][]float64 {
	out := make([][]float64, len(att))
	for l, a := range att {
		out[l] = make([]float64, a.Shape[1])
		for h := range out[l] {
			for _, b := range sentences {
				w := a.Row(b, h, pos[b][0])
				out[l][h] += float64(w[pos[b][1]]-w[pos[b][2]]) / float64(len(sentences))
			}
		}
	}
	return out
}

// Indices returns from, from+step, … below to.
func Indices(from, to, step int) []int {
	var out []int
	for i := from; i < to; i += step {
		out = append(out, i)
	}
	return out
}

// RepeatedTokens returns batch sequences of t random token ids in [lo, hi), each followed by
// itself: [batch][2t], drawn with the seed.
func RepeatedTokens(seed uint64, batch, t, lo, hi int) [][]int {
	rng := rand.New(rand.NewPCG(seed, seed))
	out := make([][]int, batch)
	for b := range out {
		s := make([]int, t)
		for i := range s {
			s[i] = lo + rng.IntN(hi-lo)
		}
		out[b] = append(s, s...)
	}
	return out
}

// InductionScores returns, per layer and head, the mean over the batch and the repeat's
// queries i = t … 2t−1 of w[i, i−t+1]: the weight on the token after the earlier copy of
// token i (notebook 11's induction score). att[layer] is [B, H, 2t, 2t].
func InductionScores(att []probe.Array, t int) [][]float64 {
	out := make([][]float64, len(att))
	for l, a := range att {
		B, H := a.Shape[0], a.Shape[1]
		out[l] = make([]float64, H)
		for h := range H {
			for b := range B {
				for i := t; i < 2*t; i++ {
					out[l][h] += float64(a.At(b, h, i, i-t+1)) / float64(B*t)
				}
			}
		}
	}
	return out
}

// TopHeads returns the k heads with the largest scores [layer][head], largest first.
func TopHeads(scores [][]float64, k int) []probe.Head {
	var all []probe.Head
	for l := range scores {
		for h := range scores[l] {
			all = append(all, probe.Head{Layer: l, Head: h})
		}
	}
	slices.SortStableFunc(all, func(a, b probe.Head) int {
		return cmp.Compare(scores[b.Layer][b.Head], scores[a.Layer][a.Head])
	})
	return all[:min(k, len(all))]
}

// RandomHeads draws k different heads of a layers × heads model, none of them in exclude,
// with the seed.
func RandomHeads(seed uint64, layers, heads, k int, exclude []probe.Head) []probe.Head {
	rng := rand.New(rand.NewPCG(seed, seed))
	var out []probe.Head
	for len(out) < k {
		h := probe.Head{Layer: rng.IntN(layers), Head: rng.IntN(heads)}
		if !slices.Contains(out, h) && !slices.Contains(exclude, h) {
			out = append(out, h)
		}
	}
	return out
}

// MeanLoss returns the mean of −logProbs[b][i] over every sequence b and i in [from, to): the
// cross-entropy of the tokens those positions predict.
func MeanLoss(logProbs [][]float32, from, to int) float64 {
	s, n := 0.0, 0
	for _, row := range logProbs {
		for _, v := range row[from:to] {
			s, n = s-float64(v), n+1
		}
	}
	return s / float64(n)
}
