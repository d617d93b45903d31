package parallel

import (
	"fmt"

	"github.com/gomlx/gomlx/backends"
	"github.com/gomlx/gomlx/pkg/core/distributed"
	. "github.com/gomlx/gomlx/pkg/core/graph" //nolint:revive // graph code reads better unqualified
	"github.com/gomlx/gomlx/pkg/core/tensors"
)

// MeshAxis is the name of the one axis of the meshes this package builds.
const MeshAxis = "devices"

// Mesh returns a one-axis mesh of n devices named MeshAxis.
func Mesh(n int) (*distributed.DeviceMesh, error) {
	return distributed.NewDeviceMesh([]int{n}, []string{MeshAxis})
}

// Runner runs one graph function on n devices of a backend with the SPMD strategy (a plain,
// single-device graph when n is 1): the same program on every device, each with its own inputs.
type Runner struct {
	backend backends.Backend
	exec    *Exec
	n       int
	release func() // frees what the runner copied (NewContextRunner's variables)
}

// NewRunner compiles fn (lazily, at the first Run) for n devices of backend. It returns an
// error when the backend has fewer than n devices.
func NewRunner(backend backends.Backend, n int, fn func(inputs []*Node) []*Node) (*Runner, error) {
	if n < 1 {
		return nil, fmt.Errorf("parallel: %d devices: want at least 1", n)
	}
	if have := backend.NumDevices(); have < n {
		return nil, fmt.Errorf("parallel: backend %s has %d device(s), %d wanted (xla:cpu makes more with xla.NewWithDevices)", backend.Name(), have, n)
	}
	exec, err := NewExec(backend, fn)
	if err != nil {
		return nil, err
	}
	if n > 1 {
		mesh, err := Mesh(n)
		if err != nil {
			return nil, err
		}
		exec = exec.SPMD(mesh)
	}
	return &Runner{backend: backend, exec: exec, n: n}, nil
}

// Devices is the number of devices r runs on.
func (r *Runner) Devices() int { return r.n }

// Run runs the graph with inputs[d], the inputs of device d (the same number on each), and
// returns outputs[d], device d's outputs.
func (r *Runner) Run(inputs [][]*tensors.Tensor) (outputs [][]*tensors.Tensor, err error) {
	if len(inputs) != r.n {
		return nil, fmt.Errorf("parallel: inputs for %d devices, the runner has %d", len(inputs), r.n)
	}
	// A tensor lives on one device: one given to several devices (x, replicated) or held on
	// another device is copied for each extra device, and the copies freed after the run.
	var flat []any
	var copies []*tensors.Tensor
	defer func() {
		for _, c := range copies {
			c.FinalizeAll()
		}
	}()
	seen := map[*tensors.Tensor]bool{}
	for d, in := range inputs {
		if len(in) != len(inputs[0]) {
			return nil, fmt.Errorf("parallel: device %d has %d inputs, device 0 has %d", d, len(in), len(inputs[0]))
		}
		for i, t := range in {
			if t == nil {
				return nil, fmt.Errorf("parallel: input %d of device %d is nil", i, d)
			}
			dev := backends.DeviceNum(d)
			if seen[t] || (t.IsOnAnyDevice() && !t.IsOnDevice(dev)) {
				var c *tensors.Tensor
				if t.IsOnAnyDevice() {
					c, err = t.OnDeviceClone(r.backend, dev)
				} else {
					c, err = t.LocalClone()
				}
				if err != nil {
					return nil, fmt.Errorf("parallel: copying input %d for device %d: %w", i, d, err)
				}
				copies = append(copies, c)
				t = c
			}
			seen[t] = true
			flat = append(flat, t)
		}
	}
	out, err := r.exec.Exec(flat...)
	if err != nil {
		return nil, err
	}
	if len(out)%r.n != 0 {
		return nil, fmt.Errorf("parallel: %d outputs for %d devices", len(out), r.n)
	}
	per := len(out) / r.n
	for d := range r.n {
		outputs = append(outputs, out[d*per:(d+1)*per])
	}
	return outputs, nil
}

// Finalize frees the compiled programs.
func (r *Runner) Finalize() {
	r.exec.Finalize()
	if r.release != nil {
		r.release()
	}
}

// Shard cuts t into n equal parts along axis (host side), for the devices' inputs. It returns
// an error when n does not divide that axis.
func Shard(t *tensors.Tensor, axis, n int) ([]*tensors.Tensor, error) {
	if axis < 0 || axis >= t.Rank() {
		return nil, fmt.Errorf("parallel: axis %d of shape %s", axis, t.Shape())
	}
	if n == 1 {
		return []*tensors.Tensor{t}, nil
	}
	spec, err := cutSpec(Cut{Rank: t.Rank(), Axis: axis}, n)
	if err != nil {
		return nil, err
	}
	if t.Shape().Dim(axis)%n != 0 {
		return nil, fmt.Errorf("parallel: %d devices do not divide axis %d of shape %s", n, axis, t.Shape())
	}
	dt, err := distributed.ShardTensor(spec, t)
	if err != nil {
		return nil, err
	}
	return dt.Shards(), nil
}

// Join concatenates shards along axis (host side): the inverse of Shard.
func Join(shards []*tensors.Tensor, axis int) (*tensors.Tensor, error) {
	if len(shards) == 1 {
		return shards[0], nil
	}
	spec, err := cutSpec(Cut{Rank: shards[0].Rank(), Axis: axis}, len(shards))
	if err != nil {
		return nil, err
	}
	dt, err := distributed.NewTensor(spec, shards)
	if err != nil {
		return nil, err
	}
	return dt.Merge()
}

// cutSpec is c's sharding spec on a new mesh of n devices.
func cutSpec(c Cut, n int) (*distributed.ShardingSpec, error) {
	mesh, err := Mesh(n)
	if err != nil {
		return nil, err
	}
	return c.Spec(mesh)
}
