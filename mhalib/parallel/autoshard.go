package parallel

import (
	"fmt"

	"github.com/gomlx/gomlx/backends"
	"github.com/gomlx/gomlx/pkg/core/distributed"
	. "github.com/gomlx/gomlx/pkg/core/graph" //nolint:revive // graph code reads better unqualified
)

// Cut says how a tensor of rank Rank is laid out over the devices: its axis Axis is cut into
// equal shards, one per device, or, with Axis = Replicated, every device holds all of it.
type Cut struct {
	Rank, Axis int
}

// Replicated is Cut.Axis for a tensor every device holds whole.
const Replicated = -1

// Spec is the sharding spec of c on mesh (nil when replicated).
func (c Cut) Spec(mesh *distributed.DeviceMesh) (*distributed.ShardingSpec, error) {
	if c.Axis == Replicated {
		return nil, nil
	}
	if c.Axis < 0 || c.Axis >= c.Rank {
		return nil, fmt.Errorf("parallel: cut axis %d of a rank-%d tensor", c.Axis, c.Rank)
	}
	b := distributed.BuildSpec(mesh)
	for i := range c.Rank {
		if i == c.Axis {
			b = b.S(MeshAxis)
		} else {
			b = b.R()
		}
	}
	return b.Done()
}

// NewAutoRunner compiles fn, written as for one device (no collectives), for n devices with
// GoMLX's AutoSharding strategy: inputs[i] and outputs[i] say how input and output i are cut
// across the devices, and XLA's partitioner (Shardy) splits the program and inserts the
// collectives. Run takes and returns each device's shards, as for NewRunner.
func NewAutoRunner(backend backends.Backend, n int, fn func(inputs []*Node) []*Node, inputs, outputs []Cut) (*Runner, error) {
	if n == 1 {
		return NewRunner(backend, 1, fn)
	}
	if have := backend.NumDevices(); have < n {
		return nil, fmt.Errorf("parallel: backend %s has %d device(s), %d wanted", backend.Name(), have, n)
	}
	mesh, err := Mesh(n)
	if err != nil {
		return nil, err
	}
	specs := func(cuts []Cut) ([]*distributed.ShardingSpec, error) {
		var out []*distributed.ShardingSpec
		for _, c := range cuts {
			s, err := c.Spec(mesh)
			if err != nil {
				return nil, err
			}
			out = append(out, s)
		}
		return out, nil
	}
	in, err := specs(inputs)
	if err != nil {
		return nil, err
	}
	out, err := specs(outputs)
	if err != nil {
		return nil, err
	}
	exec, err := NewExec(backend, fn)
	if err != nil {
		return nil, err
	}
	exec = exec.AutoSharding(mesh).WithInputShardingSpecs(in...).WithOutputShardingSpecs(out...)
	return &Runner{backend: backend, exec: exec, n: n}, nil
}
