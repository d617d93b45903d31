package mhatest

import "fmt"

// NumGrad estimates the gradient of the scalar function f with respect to
// every element of x by central differences:
//
//	grad[i] ≈ (f(x + eps·e_i) − f(x − eps·e_i)) / (2·eps)
//
// f must read x (it is usually a closure over x). NumGrad changes one element
// of x at a time and restores it before moving on, so x is unchanged
// afterwards. The error of the estimate is O(eps²) for smooth f; eps around
// 1e-6 suits float64 functions of size O(1).
//
// x: any shape → grad: the same shape.
func NumGrad(f func() float64, x *Tensor, eps float64) *Tensor {
	grad := New(x.Shape...)
	for i := range x.Data {
		saved := x.Data[i]
		x.Data[i] = saved + eps
		plus := f()
		x.Data[i] = saved - eps
		minus := f()
		x.Data[i] = saved
		grad.Data[i] = (plus - minus) / (2 * eps)
	}
	return grad
}

// Loss is Σ_i out[i]·cotangent[i]: a scalar whose gradient with respect to
// out is the cotangent. Differentiating Loss(F(x), c) gives the
// vector-Jacobian product cᵀ·∂F/∂x, which is what a backward pass computes.
// It panics if the shapes differ.
func Loss(out, cotangent *Tensor) float64 {
	if !SameShape(out.Shape, cotangent.Shape) {
		panic(fmt.Errorf("mhatest: Loss: out shape %v differs from cotangent shape %v", out.Shape, cotangent.Shape))
	}
	sum := 0.0
	for i := range out.Data {
		sum += out.Data[i] * cotangent.Data[i]
	}
	return sum
}
