package nb_test

import (
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gomlx/gomlx/pkg/core/tensors"
	"github.com/mhalab/mhalab/notebooks/nb"
)

func TestMeanVarStdMaxAbs(t *testing.T) {
	m, v := nb.MeanVar([]float64{1, 2, 3, 4})
	if m != 2.5 || v != 1.25 {
		t.Errorf("MeanVar = %v, %v, want 2.5, 1.25", m, v)
	}
	if s := nb.Std(tensors.FromValue([]float32{1, 3})); s != 1 {
		t.Errorf("Std = %v, want 1", s)
	}
	if a := nb.MaxAbs([]float64{0.5, -2, 1}); a != 2 {
		t.Errorf("MaxAbs = %v, want 2", a)
	}
}

func TestHistogram(t *testing.T) {
	c, n := nb.Histogram([]float64{-1, -0.5, 0, 0.49, 0.5, 1, 7}, -1, 1, 4)
	if !slices.Equal(c, []float64{-0.75, -0.25, 0.25, 0.75}) {
		t.Errorf("centres %v", c)
	}
	// [-1,-0.5): -1; [-0.5,0): -0.5; [0,0.5): 0, 0.49; [0.5,1): 0.5; 1 and 7 are outside.
	if !slices.Equal(n, []float64{1, 1, 2, 1}) {
		t.Errorf("counts %v, want [1 1 2 1]", n)
	}
}

func TestRowMaxAndArgmax(t *testing.T) {
	w := tensors.FromValue([][]float32{{0.5, 0.25, 0.25}, {0, 1, 0}}) // [2, 3]
	if m := nb.MeanRowMax(w); m != 0.75 {
		t.Errorf("MeanRowMax = %v, want (0.5 + 1) / 2", m)
	}
	neg := tensors.FromValue([][]float32{{-3, -1, -2}})
	if m := nb.MeanRowMax(neg); m != -1 {
		t.Errorf("MeanRowMax of negative rows = %v, want -1", m)
	}
	if i := nb.Argmax([]float64{1, 3, 3, 2}); i != 1 {
		t.Errorf("Argmax = %d, want 1 (first of the ties)", i)
	}
	logits := tensors.FromValue([][][]float32{{{0, 1, 0}, {5, 0, 0}}}) // [1, 2, 3]
	if a, b := nb.ArgmaxAt(logits, 0), nb.ArgmaxAt(logits, 1); a != 1 || b != 0 {
		t.Errorf("ArgmaxAt = %d, %d, want 1, 0", a, b)
	}
}

func TestSliceAxisTokensSub(t *testing.T) {
	x := tensors.FromValue([][][]float32{{{0, 1}, {2, 3}, {4, 5}}}) // [1, 3, 2]
	s := nb.SliceAxis(x, 1, 1, 3)
	if !slices.Equal(s.Shape().Dimensions, []int{1, 2, 2}) || !slices.Equal(nb.Floats(s), []float64{2, 3, 4, 5}) {
		t.Errorf("SliceAxis(x, 1, 1, 3) = %s %v", s.Shape(), nb.Floats(s))
	}
	w := tensors.FromValue([][]float32{{0, 1, 2}, {3, 4, 5}}) // [2, 3]
	if c := nb.SliceAxis(w, 1, 2, 3); !slices.Equal(nb.Floats(c), []float64{2, 5}) {
		t.Errorf("SliceAxis(w, 1, 2, 3) = %v, want column 2", nb.Floats(c))
	}
	func() {
		defer func() {
			if _, ok := recover().(error); !ok {
				t.Errorf("SliceAxis out of range does not panic with an error")
			}
		}()
		nb.SliceAxis(w, 0, 1, 3)
	}()
	tok := nb.Tokens([]int32{7, 8}, 4)
	if got := tensors.MustCopyFlatData[int32](tok); !slices.Equal(got, []int32{7, 8, 0, 0}) || tok.Shape().Dim(0) != 1 {
		t.Errorf("Tokens = %s %v", tok.Shape(), got)
	}
	d := nb.Sub([][]float64{{1, 2}}, [][]float64{{0.5, 3}})
	if d[0][0] != 0.5 || d[0][1] != -1 {
		t.Errorf("Sub = %v", d)
	}
	_ = math.Pi
}

func TestBoxes(t *testing.T) {
	b := nb.Boxes("q", "[2]", "k", "[3]", "v")
	if len(b) != 3 || b[1] != (nb.Box{Label: "k", Note: "[3]"}) || b[2].Note != "" {
		t.Errorf("Boxes = %+v", b)
	}
}

func TestExerciseNeverPanics(t *testing.T) {
	if nb.Exercise(false, "hint", "done") || !nb.Exercise(true, "hint", "done %d", 1) {
		t.Errorf("Exercise does not return ok")
	}
}

func TestCompareTimesOnlyWhenRangesSeparate(t *testing.T) {
	ms := func(lo, med, hi int) nb.Times {
		return nb.Times{Low: time.Duration(lo) * time.Millisecond, Median: time.Duration(med) * time.Millisecond,
			High: time.Duration(hi) * time.Millisecond, Runs: 5}
	}
	for _, c := range []struct {
		a, b nb.Times
		says string
	}{
		{ms(20, 22, 25), ms(9, 10, 12), "2.20× slower than"},
		{ms(9, 10, 12), ms(20, 22, 25), "faster (0.45× the time) than"},
		{ms(9, 14, 21), ms(20, 22, 25), "within the spread"},
	} {
		if got := nb.CompareTimes(c.a, c.b); !strings.HasPrefix(got, c.says) {
			t.Errorf("CompareTimes(%v, %v) = %q, want %q…", c.a, c.b, got, c.says)
		}
	}
	ms3 := []time.Duration{3 * time.Millisecond, 1 * time.Millisecond, 2 * time.Millisecond}
	if got := nb.TimesOf(ms3); got.Median != 2*time.Millisecond || got.Min != time.Millisecond || got.Runs != 3 {
		t.Errorf("TimesOf(3, 1, 2 ms) = %+v", got)
	}
	if n := nb.Time(4, func() {}); n.Runs != 4 || n.Min > n.Low || n.Low > n.Median || n.Median > n.High || n.High > n.Max {
		t.Errorf("Time: %+v", n)
	}
}
