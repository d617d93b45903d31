package main

import (
	"flag"
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

// defaultMaxMemory is the default of --max-memory: an explicit limit, the same on every
// machine, instead of one read from the machine's current load.
const defaultMaxMemory = 8 << 30

// bytesFlag is a flag holding a number of bytes: "8GiB", "512 MiB", "2e9", "1000000".
type bytesFlag uint64

func (b *bytesFlag) String() string { return humanize.IBytes(uint64(*b)) }

func (b *bytesFlag) Set(s string) error {
	n, err := humanize.ParseBytes(s)
	if err != nil {
		return fmt.Errorf("want a size such as 8GiB or 512MiB")
	}
	*b = bytesFlag(n)
	return nil
}

// addMaxMemoryFlag defines --max-memory on fs.
func addMaxMemoryFlag(fs *flag.FlagSet, what string) *bytesFlag {
	b := bytesFlag(defaultMaxMemory)
	fs.Var(&b, "max-memory", "refuse to start when "+what+" would need more memory than this (e.g. 8GiB, 512MiB)")
	return &b
}

// sizeFlag is an integer flag checked by checkSizes.
type sizeFlag struct {
	name  string // flag name, without dashes
	value int
}

// checkSizes returns an error naming the first flag that is not positive.
func checkSizes(sizes ...sizeFlag) error {
	for _, s := range sizes {
		if s.value < 1 {
			return fmt.Errorf("--%s %d: want a positive number", s.name, s.value)
		}
	}
	return nil
}

// checkHeads returns an error unless heads divides dModel (both positive).
func checkHeads(headsFlag string, heads int, dModelFlag string, dModel int) error {
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

// tensorNeed is count float32 tensors of shape dims.
type tensorNeed struct {
	what  string // "x, q, k, v, output"
	count int
	dims  []int
}

func (t tensorNeed) bytes() *big.Int {
	n := big.NewInt(int64(t.count) * 4)
	for _, d := range t.dims {
		n.Mul(n, big.NewInt(int64(d)))
	}
	return n
}

func (t tensorNeed) String() string {
	dims := make([]string, len(t.dims))
	for i, d := range t.dims {
		dims[i] = fmt.Sprint(d)
	}
	s := fmt.Sprintf("[%s]", strings.Join(dims, " "))
	if t.count > 1 {
		s = fmt.Sprintf("%d × %s", t.count, s)
	}
	return fmt.Sprintf("%s %s", t.what, s)
}

// checkMemory returns an error when the float32 tensors of needs add up to more than limit
// bytes; the error starts with subject and lists the tensors and the total.
func checkMemory(subject, activity string, limit uint64, needs ...tensorNeed) error {
	total := new(big.Int)
	parts := make([]string, len(needs))
	for i, n := range needs {
		total.Add(total, n.bytes())
		parts[i] = n.String()
	}
	if total.Cmp(new(big.Int).SetUint64(limit)) <= 0 {
		return nil
	}
	return fmt.Errorf("%s: %s would need %s of float32 tensors (%s), more than --max-memory %s",
		subject, activity, humanize.BigIBytes(total), strings.Join(parts, "; "), humanize.IBytes(limit))
}
