// Package parity checks mhalib against PyTorch: it reads the reference files that parity/gen.py
// writes (PyTorch float32 and float64 results of nn.MultiheadAttention, F.scaled_dot_product_attention
// and the seed posts' modules, with their parameters, inputs, masks and a cotangent), recomputes
// every result with mhalib (Run) and compares under the tolerance policy of parity/README.md
// (Reference.Check): mhalib's error against the float64 reference may be at most twice PyTorch
// float32's own, plus a floor of a few float32 ulps.
//
// The committed fixtures are in parity/testdata; `make parity` regenerates the references with the
// installed PyTorch (all cases plus random configurations) and points MHALAB_PARITY_DIR at them.
package parity
