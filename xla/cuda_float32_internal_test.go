package xla

import (
	"maps"
	"testing"
)

// TestCUDAFloat32Env checks the environment set before the CUDA plugin loads: full float32
// by default (cuBLAS's TF32 off, XLA's Triton GEMMs off), nothing the user set overwritten,
// and MHALAB_CUDA_TF32=1 leaving XLA's TF32 default alone.
func TestCUDAFloat32Env(t *testing.T) {
	for _, tc := range []struct {
		name string
		env  map[string]string
		set  map[string]string
		note string
	}{
		{"empty", nil,
			map[string]string{"NVIDIA_TF32_OVERRIDE": "0", "XLA_FLAGS": "--xla_gpu_enable_triton_gemm=false"}, ", TF32 off"},
		{"flags kept", map[string]string{"XLA_FLAGS": "--xla_dump_to=/tmp/d"},
			map[string]string{"NVIDIA_TF32_OVERRIDE": "0", "XLA_FLAGS": "--xla_dump_to=/tmp/d --xla_gpu_enable_triton_gemm=false"}, ", TF32 off"},
		{"override set by user", map[string]string{"NVIDIA_TF32_OVERRIDE": "0"},
			map[string]string{"XLA_FLAGS": "--xla_gpu_enable_triton_gemm=false"}, ", TF32 off"},
		{"user wants TF32 in cuBLAS", map[string]string{"NVIDIA_TF32_OVERRIDE": "1"},
			map[string]string{"XLA_FLAGS": "--xla_gpu_enable_triton_gemm=false"}, ", TF32 as $NVIDIA_TF32_OVERRIDE=1 says"},
		{"user sets triton", map[string]string{"XLA_FLAGS": "--xla_gpu_enable_triton_gemm=true"},
			map[string]string{"NVIDIA_TF32_OVERRIDE": "0"}, ", TF32 off in cuBLAS; --xla_gpu_enable_triton_gemm as $XLA_FLAGS sets it"},
		{"opt out", map[string]string{"MHALAB_CUDA_TF32": "1", "XLA_FLAGS": "--a"},
			nil, ", TF32 allowed (MHALAB_CUDA_TF32=1)"},
		{"opt out needs 1", map[string]string{"MHALAB_CUDA_TF32": "0"},
			map[string]string{"NVIDIA_TF32_OVERRIDE": "0", "XLA_FLAGS": "--xla_gpu_enable_triton_gemm=false"}, ", TF32 off"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			set, note := cudaFloat32Env(func(k string) string { return tc.env[k] })
			if len(set) == 0 && len(tc.set) == 0 {
				set, tc.set = nil, nil
			}
			if !maps.Equal(set, tc.set) || note != tc.note {
				t.Errorf("cudaFloat32Env(%v) = %v, %q; want %v, %q", tc.env, set, note, tc.set, tc.note)
			}
		})
	}
}
