package bench

import (
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/gomlx/gomlx/backends"
	"github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/tensors"
	"github.com/gomlx/gomlx/pkg/ml/context"

	"github.com/mhalab/mhalab/mhalib"
	"github.com/mhalab/mhalab/mhalib/parallel"
)

// The devices suite: attention across the devices of one backend (mhalib/parallel), timed on
// 1, 2, 4 … devices. On xla:cpu the devices are virtual and share the machine's cores, so the
// times show the cost of partitioning and of the all-reduces (and how the work spreads over the
// cores), not the scaling of real devices; on several GPUs
// (`--backend xla:cuda --devices N`) the same rows measure the real thing.

// devicesResult is one timed case on one device count.
type devicesResult struct {
	Backend, Kind, Shape string
	Devices              int
	MedianMS, CPUMS      float64
	CompileMS            float64
	Runs                 int
	// InputBytesPerDevice is what each device holds of the inputs (shards and replicas),
	// computed from shapes.
	InputBytesPerDevice int64
	// AllReduceBytes is the payload of the step's all-reduces (computed from shapes; the same
	// on every device); RingBytesPerDevice what a ring all-reduce sends from each device.
	AllReduceBytes, RingBytesPerDevice int64
	Load                               string
	Error                              string `json:",omitempty"`
}

// devicesCase builds one parallel step for n devices: its graph function and each device's inputs.
type devicesCase struct {
	kind, shape string
	messages    []parallel.Message
	build       func(backend backends.Backend, n int) (*parallel.Runner, [][]*tensors.Tensor, error)
}

func devicesCases(quick bool) []devicesCase {
	hB, hL, hE, hH := 4, 128, 256, 8
	sB, sH, sLq, sLk, sD := 1, 8, 256, 2048, 64
	dB, dL, dE, dH := 8, 64, 128, 4
	if quick {
		hB, hL, hE, hH = 2, 16, 32, 4
		sB, sH, sLq, sLk, sD = 1, 2, 16, 64, 8
		dB, dL, dE, dH = 4, 8, 16, 2
	}
	return []devicesCase{
		{
			kind: "heads fwd+bwd", shape: fmt.Sprintf("B%d L%d E%d h%d", hB, hL, hE, hH),
			messages: parallel.HeadParallelMessages(hB, hL, hE, 4, true),
			build: func(backend backends.Backend, n int) (*parallel.Runner, [][]*tensors.Tensor, error) {
				local := hH / n
				r, err := parallel.NewRunner(backend, n, func(in []*graph.Node) []*graph.Node {
					w := parallel.HeadWeights{Wq: in[2], Wk: in[3], Wv: in[4], Wo: in[5]}
					y, g := parallel.HeadParallelGradients(in[0], w, local, mhalib.CausalTopLeft, in[1])
					return []*graph.Node{y, g.Dx, g.DWq, g.DWk, g.DWv, g.DWo}
				})
				if err != nil {
					return nil, nil, err
				}
				rows := hE / n
				var in [][]*tensors.Tensor
				for d := range n {
					s := uint64(10 * d)
					in = append(in, []*tensors.Tensor{uniformTensor(1, hB, hL, hE), uniformTensor(2, hB, hL, hE),
						uniformTensor(s+3, rows, hE), uniformTensor(s+4, rows, hE), uniformTensor(s+5, rows, hE), uniformTensor(s+6, hE, rows)})
				}
				return r, in, nil
			},
		},
		{
			kind: "sequence fwd+bwd", shape: fmt.Sprintf("B%d h%d Lq%d Lk%d dk%d", sB, sH, sLq, sLk, sD),
			messages: parallel.SequenceParallelMessages(sB, sH, sLq, sD, sD, 4, true),
			build: func(backend backends.Backend, n int) (*parallel.Runner, [][]*tensors.Tensor, error) {
				r, err := parallel.NewRunner(backend, n, func(in []*graph.Node) []*graph.Node {
					out, dq, dk, dv := parallel.SequenceParallelGradients(in[0], in[1], in[2], parallel.DefaultScale(sD), true, in[3], in[4])
					return []*graph.Node{out, dq, dk, dv}
				})
				if err != nil {
					return nil, nil, err
				}
				keys := sLk / n
				var in [][]*tensors.Tensor
				for d := range n {
					s := uint64(10 * d)
					in = append(in, []*tensors.Tensor{uniformTensor(1, sB, sH, sLq, sD), uniformTensor(s+2, sB, sH, keys, sD),
						uniformTensor(s+3, sB, sH, keys, sD), tensors.FromValue(int32(d * keys)), uniformTensor(4, sB, sH, sLq, sD)})
				}
				return r, in, nil
			},
		},
		{
			kind: "data: pre-LN block step", shape: fmt.Sprintf("B%d L%d E%d h%d", dB, dL, dE, dH),
			messages: parallel.DataParallelMessages(dE, 4),
			build: func(backend backends.Backend, n int) (*parallel.Runner, [][]*tensors.Tensor, error) {
				ctx := context.New()
				ctx.SetRNGStateFromSeed(28)
				r, err := parallel.NewContextRunner(backend, n, ctx, func(ctx *context.Context, in []*graph.Node) []*graph.Node {
					loss, _, grads := parallel.DataParallelGradients(ctx, in[0], in[1], dH, dB, mhalib.CausalTopLeft)
					return append([]*graph.Node{loss}, grads...)
				})
				if err != nil {
					return nil, nil, err
				}
				var in [][]*tensors.Tensor
				for d := range n {
					s := uint64(10 * d)
					in = append(in, []*tensors.Tensor{uniformTensor(s+1, dB/n, dL, dE), uniformTensor(s+2, dB/n, dL, dE)})
				}
				return r, in, nil
			},
		},
	}
}

// deviceCounts are 1, 2, 4, … up to max.
func deviceCounts(max int) []int {
	var ns []int
	for n := 1; n <= max; n *= 2 {
		ns = append(ns, n)
	}
	return ns
}

// benchDevices times every devices case on 1, 2, 4, … devices of each XLA backend (up to
// maxDevices, or the backend's device count when 0).
func benchDevices(backendsInOrder []string, live map[string]backends.Backend, maxDevices int, quick bool, budget time.Duration, bar *progressBar) []devicesResult {
	var out []devicesResult
	for _, spec := range backendsInOrder {
		backend := live[spec]
		if backend == nil || backend.Name() != "xla" {
			continue // the pure-Go backend has one device and no all-reduce
		}
		limit := backend.NumDevices()
		if maxDevices > 0 {
			limit = min(limit, maxDevices)
		}
		for _, c := range devicesCases(quick) {
			for _, n := range deviceCounts(limit) {
				bar.start(fmt.Sprintf("%s %s on %d device(s)", spec, c.kind, n))
				out = append(out, benchDevicesCase(backend, spec, c, n, budget))
			}
		}
	}
	return out
}

func benchDevicesCase(backend backends.Backend, spec string, c devicesCase, n int, budget time.Duration) devicesResult {
	res := devicesResult{Backend: spec, Kind: c.kind, Shape: c.shape, Devices: n}
	payload := parallel.TotalBytes(c.messages)
	if n > 1 {
		res.AllReduceBytes, res.RingBytesPerDevice = payload, parallel.RingBytes(payload, n)
	}
	r, inputs, err := c.build(backend, n)
	if err != nil {
		res.Error = err.Error()
		return res
	}
	defer r.Finalize()
	for _, t := range inputs[0] {
		res.InputBytesPerDevice += int64(t.Memory())
	}
	run := func() error {
		out, err := r.Run(inputs)
		if err != nil {
			return err
		}
		for _, o := range out {
			if err := finalizeAll(o); err != nil {
				return err
			}
		}
		return nil
	}
	t, err := timeRuns(run, run, 1, 20, budget)
	if err != nil {
		res.Error = err.Error()
		return res
	}
	res.CompileMS, res.Runs = t.compileMS, len(t.timesMS)
	res.MedianMS, res.CPUMS = Median(t.timesMS), Median(t.cpuMS)
	res.Load = loadAverage()
	return res
}

// printDevices writes the devices suite's table.
func printDevices(w io.Writer, rows []devicesResult, cpus int) {
	fmt.Fprintln(w, "\n== Attention across devices (mhalib/parallel; step = forward + backward) ==")
	fmt.Fprintf(w, "xla:cpu devices are virtual: all of them share this machine's %d core(s), so the times show the\n", cpus)
	fmt.Fprintln(w, "overhead of partitioning and all-reduces and how the work spreads over the cores, not what as many real")
	fmt.Fprintln(w, "devices would give. On GPUs: mhalab bench --suites devices --backends xla:cuda --devices N.")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "backend\tcase\tshape\tdevices\tmedian ms\tCPU ms\tvs 1 device\tinputs/device\tall-reduce B\tring B/device\tload\t")
	base := map[string]float64{}
	for _, r := range rows {
		if r.Error != "" {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%d\terror: %s\t\t\t\t\t\t\t\n", r.Backend, r.Kind, r.Shape, r.Devices, r.Error)
			continue
		}
		key := r.Backend + r.Kind
		if r.Devices == 1 {
			base[key] = r.MedianMS
		}
		ratio := "-"
		if b := base[key]; b > 0 {
			ratio = fmt.Sprintf("%.2f×", r.MedianMS/b)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\t%s\t%d\t%d\t%d\t%s\t\n", r.Backend, r.Kind, r.Shape, r.Devices,
			FormatMS(r.MedianMS), FormatMS(r.CPUMS), ratio, r.InputBytesPerDevice, r.AllReduceBytes, r.RingBytesPerDevice, r.Load)
	}
	_ = tw.Flush()
}
