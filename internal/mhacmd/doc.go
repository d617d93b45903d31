// Package mhacmd runs what the attention commands of mhalab do once their flags are parsed and
// checked: Demo (`mhalab demo`: one multi-head self-attention forward pass, checked and timed),
// HLO (`mhalab hlo`: what XLA makes of that graph) and CheckInputs + Forward (`mhalab forward`:
// torch.nn.MultiheadAttention's forward on PyTorch-layout tensors).
//
// It sits under internal/ because its API is the command's: programs use mhalib, xla and
// torchio directly.
package mhacmd
