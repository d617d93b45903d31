// Package parallel computes multi-head attention across several devices of one backend, and
// says what the devices send each other.
//
// Three things in attention are independent, and each gives a way to cut the work:
//
//   - Heads (tensor parallelism, Megatron-LM style): device d holds the rows of Wq, Wk, Wv that
//     make its heads and the matching columns of Wo. It computes its heads' attention and a
//     partial output heads_d·Wo_dᵀ [B, L, E]; one all-reduce (sum) adds the partials.
//     HeadParallel.
//
//   - The batch (data parallelism): every device holds all weights and B/N sequences; the
//     gradients of the weights are averaged with one all-reduce. DataParallelGradients.
//
//   - The sequence of keys (ring attention's merge, without the ring): device d holds Lk/N keys
//     and values, computes its partial output o_d and the log-sum-exp of its logits lse_d, and
//     the shards merge exactly — the same rule flash attention's online softmax applies block
//     after block (mhalib.FlashAttention):
//
//     m = max_d lse_d,  w_d = exp(lse_d − m),  out = Σ_d w_d·o_d / Σ_d w_d
//
//     with one all-reduce (max) and one all-reduce (sum of [w·o | w]). ShardAttention and
//     MergeShards; MergeTwo is the same merge of two shards written out without collectives.
//
// # Where it runs
//
// The functions build graph code for GoMLX's SPMD strategy (graph.Exec.SPMD): the same program
// runs on every device of a one-axis mesh, each device gets its own inputs (its shards), and
// the collectives (graph.Graph.Distributed().AllReduce) are explicit. In a graph that is not
// distributed (one device) the collectives are the identity, so the same code gives the
// single-device result. GoMLX's AutoSharding strategy gets to the same programs from sharding
// annotations alone (ShardingSpecs); XLA's partitioner inserts the collectives.
//
// XLA gives several virtual devices on one CPU (xla.NewWithDevices in this module); GoMLX's
// pure-Go backend has one device and no collectives.
//
// # Gradients through collectives
//
// GoMLX v0.26 has no gradient for AllReduce. The backward passes here use what the forward
// pass is made of: a replicated output y computed from r = Σ_d p_d (an all-reduce of per-device
// partials p_d). For a cotangent dy of y, dr = ∂⟨y, dy⟩/∂r is the same on every device, and the
// gradient of a device's own inputs is the vector-Jacobian product of its partial,
// ∂⟨p_d, dr⟩/∂θ_d (Megatron's "g" operator: all-reduce forward, identity backward). An input
// every device holds whole (x in head parallelism, q in sequence parallelism) receives a
// partial gradient from each device: those are summed with one more all-reduce (Megatron's "f"
// operator: identity forward, all-reduce backward).
//
// # Communication
//
// Bytes reports what each all-reduce moves, computed from shapes; the compiled program's
// all-reduce operations (xla.OptimizedHLO, `mhalab hlo --devices N`) can be read to compare.
package parallel
