package bench

import (
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/gomlx/gomlx/backends"
	"github.com/gomlx/gomlx/pkg/core/graph"
)

// Suite products: the four matrix products of one plain MultiHeadAttention forward pass, each
// alone, on every backend, in GFLOP/s and as a share of the cores' float32 FMA peak (peak.go).
// They carry almost all of a pass's FLOPs, so a backend whose products run at a low share of
// the peak cannot make up for it elsewhere: the suite says where a forward pass's time goes
// before any fusion or formulation is blamed. The projections are large square-ish products;
// attention's per-head products have one side of dk = E/h (64 here), batched over B·h — the
// shape that separates backends' kernels most. (Flash cuts the same per-head products into
// tiles of its blocks: smaller still.)

// product is one DotGeneral of a case: lhs · rhs contracting lContract with rContract, with
// batch axes lBatch and rBatch.
type product struct {
	Name                                 string
	lhs, rhs                             []int
	lContract, lBatch, rContract, rBatch []int
}

// flops is the product's float32 FLOPs: 2 per multiply–add.
func (p product) flops() float64 {
	f := 2.0
	for _, d := range p.lhs {
		f *= float64(d)
	}
	for i, d := range p.rhs {
		if !slices.Contains(p.rContract, i) && !slices.Contains(p.rBatch, i) {
			f *= float64(d)
		}
	}
	return f
}

// operands is e.g. "[4096 512] · [1536 512]ᵀ".
func (p product) operands() string {
	t := ""
	if len(p.rContract) == 1 && p.rContract[0] == len(p.rhs)-1 {
		t = "ᵀ"
	}
	return fmt.Sprintf("%v · %v%s", p.lhs, p.rhs, t)
}

// products returns the products of c's plain forward pass, as mhalib computes them: the
// q, k, v projection, with fused as one product x [B·L, E] · W [3E, E]ᵀ (on XLA) or else as
// three of x · W [E, E]ᵀ (the pure-Go backend: one of them is timed), the scores q·kᵀ
// [B·h, L, dk] · [B·h, L, dk]ᵀ, the weights times the values [B·h, L, L] · [B·h, L, dk], and the
// output projection [B·L, E] · W [E, E]ᵀ. Their FLOPs add up to c.flops() (without the causal
// halving).
func (c mhaCase) products(fused bool) []product {
	n, e, bh, dk := c.B*c.L, c.E, c.B*c.H, c.E/c.H
	inProj := product{"q, k, v projection", []int{n, e}, []int{3 * e, e}, []int{1}, nil, []int{1}, nil}
	if !fused {
		inProj = product{"q, k, v projection (one of 3)", []int{n, e}, []int{e, e}, []int{1}, nil, []int{1}, nil}
	}
	return []product{
		inProj,
		{"scores q·kᵀ", []int{bh, c.L, dk}, []int{bh, c.L, dk}, []int{2}, []int{0}, []int{2}, []int{0}},
		{"weights · v", []int{bh, c.L, c.L}, []int{bh, c.L, dk}, []int{2}, []int{0}, []int{1}, []int{0}},
		{"output projection", []int{n, e}, []int{e, e}, []int{1}, nil, []int{1}, nil},
	}
}

// productResult is one product timed on one backend.
type productResult struct {
	Group       string    `json:"group"`
	Shape       string    `json:"shape"` // the case's, e.g. "B32 L128 E512 h8"
	Product     string    `json:"product"`
	Operands    string    `json:"operands"`
	Backend     string    `json:"backend"`
	TimesMS     []float64 `json:"times_ms,omitempty"`
	MedianMS    float64   `json:"median_ms"`
	GFLOPS      float64   `json:"gflops"`
	PeakPercent float64   `json:"peak_percent,omitempty"` // GFLOPS / the machine's FMA peak × 100 (finishPeak)
	Error       string    `json:"error,omitempty"`
}

// productCases returns one case per group (the first of each: products do not depend on the
// causal mask or the formulation).
func productCases(cases []mhaCase) []mhaCase {
	var out []mhaCase
	for _, c := range cases {
		if !slices.ContainsFunc(out, func(o mhaCase) bool { return o.Group == c.Group }) {
			out = append(out, c)
		}
	}
	return out
}

// benchProduct times p on backend: compiled, one untimed run, then runs until 3 are done and
// budget is spent, or 50.
func benchProduct(backend backends.Backend, spec string, c mhaCase, p product, budget time.Duration) productResult {
	res := productResult{Group: c.Group, Shape: fmt.Sprintf("B%d L%d E%d h%d", c.B, c.L, c.E, c.H), Product: p.Name, Operands: p.operands(), Backend: spec}
	exec, err := graph.NewExec(backend, func(x, y *graph.Node) *graph.Node {
		return graph.DotGeneral(x, p.lContract, p.lBatch, y, p.rContract, p.rBatch)
	})
	if err != nil {
		res.Error = err.Error()
		return res
	}
	defer exec.Finalize()
	x, y := uniformTensor(21, p.lhs...), uniformTensor(22, p.rhs...)
	t, err := timeRuns(func() error { return exec.PreCompile(x, y) }, func() error {
		out, err := exec.Exec(x, y)
		if err != nil {
			return err
		}
		return finalizeAll(out)
	}, 1, 50, budget)
	if err != nil {
		res.Error = err.Error()
		return res
	}
	res.TimesMS, res.MedianMS = t.timesMS, Median(t.timesMS)
	res.GFLOPS = p.flops() / (res.MedianMS * 1e6) // its share of the peak: finishPeak
	return res
}

// printProducts prints the products suite's table.
func printProducts(w io.Writer, rep *benchReport) {
	if len(rep.Products) == 0 {
		return
	}
	fmt.Fprintf(w, "\n## Matrix products of the forward pass, each alone, float32\n\n")
	fmt.Fprintf(w, "The products of a plain MultiHeadAttention pass as mhalib makes them on each backend (XLA: one q, k, v projection with W [3E, E]; the pure-Go backend: three with W [E, E]); %% of peak: of the cores' float32 FMA peak above.\n\n")
	fmt.Fprintf(w, "| case | shape | product | operands | backend | median | GFLOP/s | %% of peak |\n|---|---|---|---|---|---:|---:|---:|\n")
	for _, r := range rep.Products {
		if r.Error != "" {
			fmt.Fprintf(w, "| %s | %s | %s | %s | %s | error: %s | | |\n", r.Group, r.Shape, r.Product, r.Operands, r.Backend, r.Error)
			continue
		}
		peak := "—"
		if r.PeakPercent > 0 {
			peak = fmt.Sprintf("%.0f%%", r.PeakPercent)
		}
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s | %.1f | %s |\n", r.Group, r.Shape, r.Product, r.Operands, r.Backend, FormatMS(r.MedianMS), r.GFLOPS, peak)
	}
}
