// Package induction trains small attention-only decoders to continue repeated random tokens,
// and measures their heads as they change: the training code of notebook 11 ("watch heads
// learn").
//
// A sequence holds a prefix of P random tokens at offset s, then the same P tokens again (Task).
// In the repeat the next token can only be predicted by copying: at a token A, find A's earlier
// occurrence and take the token after it. Olsson et al. 2022 ("In-context learning and
// induction heads") found that transformers do this with two heads in series: a previous-token
// head (query i attends to key i−1, so position j learns which token preceded it) and, in a
// later layer, an induction head (query i attends to the key whose previous token equals token
// i, and copies that key's token). PrevTokenScore and InductionScore measure both patterns.
//
// Two runs are defined. Repeat (P = 12 at offset 0, learned positions: decode.Decoder) can copy
// by position alone, since the copy is always 11 keys back; notebook 7 decodes with its
// weights. Induction (P = 8 … 16 at random offsets, rotary positions) cannot: the distance
// varies, and its model forms a previous-token head in layer 0 and induction heads in layer 1.
package induction

import (
	"fmt"
	"math/rand/v2"
	"strings"

	"github.com/gomlx/gomlx/pkg/core/tensors"
)

// Task describes the sequences: random tokens, with a prefix of P tokens starting at a random
// offset s and repeated right after it (positions s … s+P−1, then s+P … s+2P−1). By default the
// prefix's tokens are distinct and the filler never uses them; with AnyTokens every token is
// drawn uniformly, as in Olsson et al.'s repeated random tokens (a token may then occur twice in
// the prefix, and a few copies are ambiguous).
type Task struct {
	Vocab                int  // tokens 0 … Vocab−1
	Len                  int  // sequence length (≥ 2·MaxPrefix)
	MinPrefix, MaxPrefix int  // prefix length P, drawn uniformly in [MinPrefix, MaxPrefix]
	AnyTokens            bool // every token uniform over the vocabulary (repeats allowed anywhere)
}

// Batch is a batch of sequences of a Task.
type Batch struct {
	Tokens  *tensors.Tensor // [B, Len] int32
	Targets *tensors.Tensor // [B, Len] int32: the next token (0 at the last position)
	Mask    *tensors.Tensor // [B, Len] float32: 1 where the target is a copy, s+P … s+2P−2
	Start   []int           // [B]: s, where the prefix starts
	Prefix  []int           // [B]: P of each sequence
	Seqs    [][]int32       // [B][Len]: the tokens
}

// Check reports a task that cannot be sampled.
func (t Task) Check() error {
	if t.MinPrefix < 2 || t.MaxPrefix < t.MinPrefix || 2*t.MaxPrefix > t.Len || t.MaxPrefix >= t.Vocab {
		return fmt.Errorf("induction: task %+v: want 2 ≤ MinPrefix ≤ MaxPrefix < Vocab and 2·MaxPrefix ≤ Len", t)
	}
	return nil
}

// Sample draws a batch of b sequences with rng.
func (t Task) Sample(rng *rand.Rand, b int) Batch {
	if err := t.Check(); err != nil {
		panic(err)
	}
	tokens, targets := make([]int32, b*t.Len), make([]int32, b*t.Len)
	mask := make([]float32, b*t.Len)
	out := Batch{Prefix: make([]int, b), Start: make([]int, b)}
	for n := range b {
		seq := tokens[n*t.Len : (n+1)*t.Len]
		p := t.MinPrefix + rng.IntN(t.MaxPrefix-t.MinPrefix+1)
		s := rng.IntN(t.Len - 2*p + 1)
		perm := rng.Perm(t.Vocab) // the prefix: perm[:p]; filler: perm[p:]
		for i := range seq {
			if t.AnyTokens {
				seq[i] = int32(rng.IntN(t.Vocab))
			} else {
				seq[i] = int32(perm[p+rng.IntN(t.Vocab-p)])
			}
		}
		if t.AnyTokens {
			for i := range p {
				perm[i] = int(seq[s+i])
			}
		}
		for i, tok := range perm[:p] {
			seq[s+i], seq[s+p+i] = int32(tok), int32(tok)
		}
		copy(targets[n*t.Len:], seq[1:])
		for i := s + p; i <= s+2*p-2; i++ {
			mask[n*t.Len+i] = 1
		}
		out.Prefix[n], out.Start[n] = p, s
		out.Seqs = append(out.Seqs, seq)
	}
	out.Tokens = tensors.FromFlatDataAndDimensions(tokens, b, t.Len)
	out.Targets = tensors.FromFlatDataAndDimensions(targets, b, t.Len)
	out.Mask = tensors.FromFlatDataAndDimensions(mask, b, t.Len)
	return out
}

// Label names token v for pictures: A … Z, then a … z, then 0 … 9, + and *, then #v.
func Label(v int32) string {
	const names = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+*"
	if v >= 0 && int(v) < len(names) {
		return names[v : v+1]
	}
	return fmt.Sprintf("#%d", v)
}

// Labels names every token of seq.
func Labels(seq []int32) []string {
	out := make([]string, len(seq))
	for i, v := range seq {
		out[i] = Label(v)
	}
	return out
}

// Marked writes seq with Label, the prefix (P tokens from s) in brackets and its repeat in braces:
// "x [A B C] {A B C} y".
func Marked(seq []int32, s, p int) string {
	l := Labels(seq)
	l[s], l[s+p-1] = "["+l[s], l[s+p-1]+"]"
	l[s+p], l[s+2*p-1] = "{"+l[s+p], l[s+2*p-1]+"}"
	return strings.Join(l, " ")
}
