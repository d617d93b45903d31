package xla

import (
	"fmt"
	"os"
	"strings"
	"sync"
)

// Full float32 matrix products on xla:cuda.
//
// XLA's GPU compiler computes a float32 dot with TensorFloat-32 inputs (10 bits of mantissa,
// relative error about 1e-3) when the dot asks for the DEFAULT precision, and GoMLX v0.26.0
// asks for nothing else. PyTorch multiplies float32 matrices in full float32 on CUDA by
// default (torch.backends.cuda.matmul.allow_tf32 is False), and mhalab's parity tests hold
// mhalib to PyTorch's error: on an H200 with TF32, 43 of the 55 parity cases failed on
// xla:cuda (errors up to 176 times the float32 error bound); all 55 pass with TF32 off, as
// on the go backend. $NVIDIA_TF32_OVERRIDE=0 alone was not enough: it turns TF32 off in
// cuBLAS and cuDNN, not in the matrix-product kernels XLA writes itself with Triton.
//
// So before it loads the CUDA plugin, this package sets, unless the user set them:
//
//   - $NVIDIA_TF32_OVERRIDE=0: cuBLAS and cuDNN never round float32 inputs to TF32;
//   - --xla_gpu_enable_triton_gemm=false, appended to $XLA_FLAGS: XLA hands float32 dots to
//     cuBLAS instead of its own Triton kernels, which use TF32 whatever the environment says.
//
// $MHALAB_CUDA_TF32=1 leaves both alone: XLA's default, faster, with TF32's error.

const (
	// CUDATF32Env names the variable that, set to 1, lets xla:cuda use TensorFloat-32.
	CUDATF32Env     = "MHALAB_CUDA_TF32"
	tf32OverrideEnv = "NVIDIA_TF32_OVERRIDE"
	tritonGemmFlag  = "--xla_gpu_enable_triton_gemm"
)

// cudaFloat32Env returns the environment variables to set (name → value) so that XLA's CUDA
// plugin multiplies float32 matrices in full float32, given the current environment getenv,
// and a note for the backend's description: ", TF32 off", or why TF32 stays as it is. It only
// adds: a variable or flag the user set is kept.
func cudaFloat32Env(getenv func(string) string) (set map[string]string, note string) {
	if v := getenv(CUDATF32Env); v == "1" {
		return nil, fmt.Sprintf(", TF32 allowed (%s=1)", CUDATF32Env)
	}
	set = map[string]string{}
	override := getenv(tf32OverrideEnv)
	if override == "" {
		set[tf32OverrideEnv] = "0"
		override = "0"
	}
	flags := getenv(xlaFlagsEnv)
	userTriton := strings.Contains(flags, tritonGemmFlag)
	if !userTriton {
		set[xlaFlagsEnv] = strings.TrimSpace(flags + " " + tritonGemmFlag + "=false")
	}
	switch {
	case override != "0":
		note = fmt.Sprintf(", TF32 as $%s=%s says", tf32OverrideEnv, override)
	case userTriton:
		note = fmt.Sprintf(", TF32 off in cuBLAS; %s as $%s sets it", tritonGemmFlag, xlaFlagsEnv)
	default:
		note = ", TF32 off"
	}
	return set, note
}

// prepareCUDA sets, once per process, the environment cudaFloat32Env asks for; loadPlugin
// calls it before it loads the CUDA plugin (cuBLAS reads $NVIDIA_TF32_OVERRIDE when it starts,
// XLA reads $XLA_FLAGS at its first client). It returns cudaFloat32Env's note, the same on
// every call.
var prepareCUDA = sync.OnceValues(func() (note string, err error) {
	set, note := cudaFloat32Env(os.Getenv)
	for name, value := range set {
		if err := os.Setenv(name, value); err != nil {
			return "", fmt.Errorf("xla: setting $%s for full float32 on CUDA: %w", name, err)
		}
	}
	return note, nil
})
