package cli

import (
	"fmt"
	"math/big"
	"strings"

	"github.com/dustin/go-humanize"
)

// Sizes given on the command line are checked before anything is allocated: each must be
// positive, heads must divide d_model, and the tensors a command would create must fit in
// --max-memory. The sums are exact (math/big), so sizes whose product overflows int64 are
// refused with their true size instead of wrapping around. These are bad values (exit 1),
// not bad usage.

// Size is an integer flag checked by CheckSizes.
type Size struct {
	Name  string // flag name, without dashes
	Value int
}

// CheckSizes returns an error naming the first flag that is not positive.
func CheckSizes(sizes ...Size) error {
	for _, s := range sizes {
		if s.Value < 1 {
			return fmt.Errorf("--%s %d: want a positive number", s.Name, s.Value)
		}
	}
	return nil
}

// CheckHeads returns an error unless heads divides dModel (both positive).
func CheckHeads(headsFlag string, heads int, dModelFlag string, dModel int) error {
	if dModel%heads != 0 {
		return fmt.Errorf("--%s %d does not divide --%s %d: each head gets d_model/heads features (try --%s %d)",
			headsFlag, heads, dModelFlag, dModel, headsFlag, largestDivisor(dModel, heads))
	}
	return nil
}

// largestDivisor returns the largest divisor of n that is at most limit (≥ 1).
func largestDivisor(n, limit int) int {
	for d := min(n, limit); d > 1; d-- {
		if n%d == 0 {
			return d
		}
	}
	return 1
}

// TensorNeed is count float32 tensors of shape dims.
type TensorNeed struct {
	What  string // "x, q, k, v, output"
	Count int
	Dims  []int
}

// Bytes is the size of the tensors in bytes (exact: it may exceed int64).
func (t TensorNeed) Bytes() *big.Int {
	n := big.NewInt(int64(t.Count) * 4)
	for _, d := range t.Dims {
		n.Mul(n, big.NewInt(int64(d)))
	}
	return n
}

func (t TensorNeed) String() string {
	dims := make([]string, len(t.Dims))
	for i, d := range t.Dims {
		dims[i] = fmt.Sprint(d)
	}
	s := fmt.Sprintf("[%s]", strings.Join(dims, " "))
	if t.Count > 1 {
		s = fmt.Sprintf("%d × %s", t.Count, s)
	}
	return fmt.Sprintf("%s %s", t.What, s)
}

// CheckMemory returns an error when the float32 tensors of needs add up to more than limit
// bytes; the error starts with subject and lists the tensors and the total.
func CheckMemory(subject, activity string, limit uint64, needs ...TensorNeed) error {
	total := new(big.Int)
	parts := make([]string, len(needs))
	for i, n := range needs {
		total.Add(total, n.Bytes())
		parts[i] = n.String()
	}
	if total.Cmp(new(big.Int).SetUint64(limit)) <= 0 {
		return nil
	}
	return fmt.Errorf("%s: %s would need %s of float32 tensors (%s), more than --max-memory %s",
		subject, activity, humanize.BigIBytes(total), strings.Join(parts, "; "), humanize.IBytes(limit))
}

// CheckMHA returns an error, before anything is allocated, when the sizes of multi-head
// attention on x [batch, seq, dModel] with heads heads (the flags --batch, --seq, --dmodel,
// --heads; and first any other sizes) are not positive, heads do not divide d_model, or
// maxMemory (--max-memory) is 0.
func CheckMHA(batch, seq, dModel, heads int, maxMemory uint64, others ...Size) error {
	sizes := append(others, Size{"batch", batch}, Size{"seq", seq}, Size{"dmodel", dModel}, Size{"heads", heads})
	if err := CheckSizes(sizes...); err != nil {
		return err
	}
	if err := CheckHeads("heads", heads, "dmodel", dModel); err != nil {
		return err
	}
	if maxMemory == 0 {
		return fmt.Errorf("--max-memory 0: want a positive size")
	}
	return nil
}
