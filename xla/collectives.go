package xla

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/gomlx/gomlx/backends"
	"github.com/gomlx/gomlx/pkg/core/distributed"
	"github.com/gomlx/gomlx/pkg/ml/context"
)

// Distribution says how OptimizedHLOFor compiles a graph for several devices: with GoMLX's SPMD
// strategy (the graph calls its collectives itself; Auto false) or with AutoSharding (Auto
// true: XLA's partitioner cuts the program as InputSpecs and OutputSpecs say, and inserts the
// collectives). Mesh is the device mesh; a nil spec means replicated.
type Distribution struct {
	Mesh                    *distributed.DeviceMesh
	Auto                    bool
	InputSpecs, OutputSpecs []*distributed.ShardingSpec
}

func (d *Distribution) configure(backend backends.Backend, exec *context.Exec) (*context.Exec, error) {
	if d.Mesh == nil {
		return nil, fmt.Errorf("xla: Distribution without a mesh")
	}
	if n, have := d.Mesh.NumDevices(), backend.NumDevices(); n > have {
		return nil, fmt.Errorf("xla: mesh of %d devices, backend has %d (xla.NewWithDevices makes more CPU devices)", n, have)
	}
	if !d.Auto {
		return exec.SPMD(d.Mesh), nil
	}
	return exec.AutoSharding(d.Mesh).WithInputShardingSpecs(d.InputSpecs...).WithOutputShardingSpecs(d.OutputSpecs...), nil
}

// Collective is one collective operation of a compiled HLO program.
type Collective struct {
	Op    string // "all-reduce", "all-gather", "reduce-scatter", "collective-permute", "all-to-all"
	Shape string // the result type, e.g. "f32[2,6,16]" or "(f32[2,6,16], f32[4])"
	Bytes int64  // the bytes of the result on one device: what the operation delivers to each
}

// collectiveOps are the HLO opcodes Collectives reports; an asynchronous pair (x-start, x-done)
// is reported once, at its start.
var collectiveOps = []string{"all-reduce", "all-gather", "reduce-scatter", "collective-permute", "all-to-all"}

var (
	hloResult = regexp.MustCompile(`^\s*(?:ROOT\s+)?%?[\w.\-]+\s*=\s*(.*?)\s([a-z][a-z0-9\-_]*)\(`)
	hloArray  = regexp.MustCompile(`\b(pred|[suf]\d+|bf16)\[([\d,]*)\]`)
)

// Collectives lists the collective operations of an HLO module's text (HLODump.After), in
// order, with the bytes of each one's result.
func Collectives(hlo string) []Collective {
	var out []Collective
	for _, line := range strings.Split(hlo, "\n") {
		m := hloResult.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		op := strings.TrimSuffix(m[2], "-start")
		if strings.HasSuffix(m[2], "-done") || !contains(collectiveOps, op) {
			continue
		}
		typ := m[1]
		if op != m[2] { // an async start returns (operands, results…): keep the result half
			typ = asyncResult(typ)
		}
		out = append(out, Collective{Op: op, Shape: typ, Bytes: arrayBytes(typ)})
	}
	return out
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// asyncResult returns the second half of the arrays of an async start's tuple type.
func asyncResult(typ string) string {
	arrays := hloArray.FindAllString(typ, -1)
	if len(arrays) < 2 {
		return typ
	}
	half := arrays[len(arrays)/2:]
	if len(half) == 1 {
		return half[0]
	}
	return "(" + strings.Join(half, ", ") + ")"
}

// arrayBytes sums the bytes of every array in an HLO type ("f32[2,3]" is 24 bytes).
func arrayBytes(typ string) int64 {
	var total int64
	for _, m := range hloArray.FindAllStringSubmatch(typ, -1) {
		elems := int64(1)
		if m[2] != "" {
			for _, d := range strings.Split(m[2], ",") {
				n, _ := strconv.ParseInt(d, 10, 64)
				elems *= n
			}
		}
		total += elems * elementBytes(m[1])
	}
	return total
}

func elementBytes(dtype string) int64 {
	switch dtype {
	case "pred":
		return 1
	case "bf16":
		return 2
	}
	bits, _ := strconv.Atoi(dtype[1:])
	return int64(bits+7) / 8
}
