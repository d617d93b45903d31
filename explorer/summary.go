package explorer

import (
	"fmt"
	"math"
)

// HeadSummary describes what one head does on one sentence: averages over the query rows of
// the head's [L, L] weights (each row sums to 1).
type HeadSummary struct {
	Layer, Head int
	// Entropy is the mean over queries of −Σₖ p·ln p, in nats: 0 when every query looks at
	// one key, ln L when it spreads evenly.
	Entropy float64
	// NormEntropy is Entropy / ln L (0 to 1).
	NormEntropy float64
	// MeanDistance is the mean over queries of Σₖ p·|q − k|, in tokens.
	MeanDistance float64
	// PrevShare is the mean over queries q ≥ 1 of the weight on token q − 1; NextShare the
	// mean over q < L−1 of the weight on q + 1; SelfShare the mean weight on q itself.
	PrevShare, NextShare, SelfShare float64
	// CLSShare and SEPShare are the mean weights on the [CLS] and [SEP] tokens.
	CLSShare, SEPShare float64
	// FirstShare is the mean weight on the first token (position 0): an attention sink in a
	// decoder, [CLS] in BERT.
	FirstShare float64
	// Kind is the head's most visible habit on this sentence (see Kind constants).
	Kind string
}

// The kinds Summarize assigns: of the four shares PrevShare, NextShare, SelfShare and
// CLSShare + SEPShare, the largest when it is at least KindThreshold; else broad or mixed.
const (
	KindPrevious  = "previous token" // PrevShare
	KindNext      = "next token"     // NextShare
	KindSelf      = "self"           // SelfShare
	KindDelimiter = "delimiter"      // CLSShare + SEPShare
	KindBroad     = "broad"          // no share ≥ 0.5, NormEntropy ≥ 0.8
	KindMixed     = "mixed"          // none of the above
)

// KindThreshold is the share above which a head gets a positional or delimiter kind.
const KindThreshold = 0.5

// Summarize computes the summary of every head. att: [layers][heads][L][L]; tokens: [L] (the
// [CLS] and [SEP] shares count the positions whose token is "[CLS]" / "[SEP]").
func Summarize(att [][][][]float32, tokens []string) ([][]HeadSummary, error) {
	L := len(tokens)
	if L == 0 {
		return nil, fmt.Errorf("explorer: no tokens")
	}
	out := make([][]HeadSummary, len(att))
	for l, layer := range att {
		out[l] = make([]HeadSummary, len(layer))
		for h, w := range layer {
			if len(w) != L {
				return nil, fmt.Errorf("explorer: layer %d head %d has %d query rows, want %d (tokens)", l, h, len(w), L)
			}
			s := HeadSummary{Layer: l, Head: h}
			for q, row := range w {
				if len(row) != L {
					return nil, fmt.Errorf("explorer: layer %d head %d query %d has %d keys, want %d", l, h, q, len(row), L)
				}
				for k, p64 := range row {
					p := float64(p64)
					if p > 0 {
						s.Entropy -= p * math.Log(p)
					}
					s.MeanDistance += p * math.Abs(float64(q-k))
					switch tokens[k] {
					case "[CLS]":
						s.CLSShare += p
					case "[SEP]":
						s.SEPShare += p
					}
				}
				s.SelfShare += float64(row[q])
				s.FirstShare += float64(row[0])
				if q >= 1 {
					s.PrevShare += float64(row[q-1])
				}
				if q+1 < L {
					s.NextShare += float64(row[q+1])
				}
			}
			n := float64(L)
			s.Entropy /= n
			s.MeanDistance /= n
			s.SelfShare /= n
			s.CLSShare /= n
			s.SEPShare /= n
			s.FirstShare /= n
			if L > 1 {
				s.PrevShare /= n - 1
				s.NextShare /= n - 1
				s.NormEntropy = s.Entropy / math.Log(n)
			}
			s.Kind = kind(s)
			out[l][h] = s
		}
	}
	return out, nil
}

func kind(s HeadSummary) string {
	best, share := "", 0.0
	for _, c := range []struct {
		kind  string
		share float64
	}{{KindPrevious, s.PrevShare}, {KindNext, s.NextShare}, {KindSelf, s.SelfShare}, {KindDelimiter, s.CLSShare + s.SEPShare}} {
		if c.share >= KindThreshold && c.share > share {
			best, share = c.kind, c.share
		}
	}
	switch {
	case best != "":
		return best
	case s.NormEntropy >= 0.8:
		return KindBroad
	}
	return KindMixed
}
