package induction

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"slices"

	"github.com/gomlx/gomlx/pkg/core/tensors"

	"github.com/mhalab/mhalab/internal/atomicfile"
)

// Record is a Snapshot reduced to numbers that can be saved: the scores, and the attention maps
// of one example of the evaluation batch.
type Record struct {
	Step      int
	Loss      float64         // mean training loss of the steps since the previous record (0 at first)
	Accuracy  float64         // CopyAccuracy on the evaluation batch
	PrevToken [][]float64     // [layer][head]
	Induction [][]float64     // [layer][head]
	Maps      [][][][]float64 // [layer][head][query][key]: the weights of the example
	Tokens    []int32         // the example's tokens
	Start     int             // where the example's prefix starts
	Prefix    int             // the example's prefix length P
}

// Record returns the record of example n of the evaluation batch b (that s measured).
func (s Snapshot) Record(b Batch, n int) Record {
	r := Record{Step: s.Step, Accuracy: s.Accuracy, PrevToken: s.PrevToken, Induction: s.Induction,
		Tokens: b.Seqs[n], Start: b.Start[n], Prefix: b.Prefix[n]}
	for _, w := range s.Weights {
		d := w.Shape().Dimensions // [B, H, L, L]
		data := tensors.MustCopyFlatData[float32](w)
		heads := make([][][]float64, d[1])
		for h := range heads {
			heads[h] = make([][]float64, d[2])
			for i := range d[2] {
				row := data[((n*d[1]+h)*d[2]+i)*d[3] : ((n*d[1]+h)*d[2]+i+1)*d[3]]
				heads[h][i] = make([]float64, d[3])
				for j, v := range row {
					heads[h][i][j] = float64(v)
				}
			}
		}
		r.Maps = append(r.Maps, heads)
	}
	return r
}

// SaveRecords writes records as JSON, the attention maps rounded to 4 decimals.
func SaveRecords(path string, records []Record) error {
	rounded := slices.Clone(records)
	for n, r := range rounded {
		if r.Maps == nil {
			continue
		}
		maps := make([][][][]float64, len(r.Maps))
		for l, heads := range r.Maps {
			maps[l] = make([][][]float64, len(heads))
			for h, rows := range heads {
				maps[l][h] = make([][]float64, len(rows))
				for i, row := range rows {
					maps[l][h][i] = make([]float64, len(row))
					for j, v := range row {
						maps[l][h][i][j] = math.Round(v*1e4) / 1e4
					}
				}
			}
		}
		rounded[n].Maps = maps
	}
	data, err := json.Marshal(rounded)
	if err != nil {
		return err
	}
	return atomicfile.WriteFile(path, data)
}

// LoadRecords reads records written by SaveRecords.
func LoadRecords(path string) ([]Record, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var records []Record
	if err := json.Unmarshal(data, &records); err != nil {
		return nil, fmt.Errorf("induction: %s: %w", path, err)
	}
	return records, nil
}

// Milestones returns the indices of the records that show heads of layer forming: the first,
// the last whose best InductionScore in layer is below 0.2, the first where it reaches 0.5, and
// the last (fewer when some coincide or the score never rises).
func Milestones(records []Record, layer int) []int {
	out := []int{0}
	add := func(i int) {
		if i > out[len(out)-1] {
			out = append(out, i)
		}
	}
	before, after := -1, -1
	for i, r := range records {
		best := slices.Max(r.Induction[layer])
		if best < 0.2 && after < 0 {
			before = i
		}
		if best >= 0.5 && after < 0 {
			after = i
		}
	}
	if after >= 0 {
		add(before)
		add(after)
	}
	add(len(records) - 1)
	return out
}

// Thin returns records with the attention maps of all but the records at indices keep removed
// (a training history to save small).
func Thin(records []Record, keep []int) []Record {
	out := slices.Clone(records)
	for i := range out {
		if !slices.Contains(keep, i) {
			out[i].Maps, out[i].Tokens = nil, nil
		}
	}
	return out
}

// Example returns the sequence of the evaluation batch the records show: the first whose prefix
// has no token twice (so that every copied token has one earlier occurrence).
func (r *Run) Example() int {
	for n, seq := range r.Eval.Seqs {
		prefix := slices.Clone(seq[r.Eval.Start[n] : r.Eval.Start[n]+r.Eval.Prefix[n]])
		slices.Sort(prefix)
		if len(slices.Compact(prefix)) == r.Eval.Prefix[n] {
			return n
		}
	}
	return 0
}

// TrainRecorded trains r for steps steps, recording the evaluation batch's Example before the
// first step and after every `every` steps.
func (r *Run) TrainRecorded(steps, every int) ([]Record, error) {
	var records []Record
	loss := 0.0
	for done := 0; ; done += every {
		s, err := r.Snapshot()
		if err != nil {
			return records, err
		}
		rec := s.Record(r.Eval, r.Example())
		rec.Loss = loss
		records = append(records, rec)
		if done >= steps {
			return records, nil
		}
		losses, err := r.Train(min(every, steps-done))
		if err != nil {
			return records, err
		}
		loss = 0
		for _, l := range losses {
			loss += l / float64(len(losses))
		}
	}
}
