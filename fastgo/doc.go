// Package fastgo makes GoMLX v0.26's pure-Go backend ("go", simplego) multiply matrices with a
// blocked, packed GEMM instead of its scalar DotGeneral kernel, and computes the element-wise
// ops around attention (Exp, ReduceMax/Sum, broadcasts, binary ops, IsFinite, Where, Identity,
// Transpose, Gather, Concatenate, whole-row Scatters) and the activations of the models
// (Logistic, Erf) on several goroutines and, for Exp, ReduceMax, Logistic and Erf, with AVX-512
// or AVX2. Import it for its side effect:
//
//	import _ "github.com/mhalab/mhalab/fastgo"
//
// mhalib does not import it (mhalib depends on GoMLX and the standard library only); the command
// (cmd/mhalab), the notebooks (notebooks/nb) and the lessons' grader opt in, one import each.
// MHALAB_FASTGO=0 in the environment switches it off (GoMLX's own kernel runs); SetEnabled does
// the same at run time, Status says what runs. It installs anything only when the program is
// built with github.com/gomlx/gomlx GoMLXVersion (v0.26.0), read from the program's build
// information (runtime/debug.ReadBuildInfo); with another version it installs nothing,
// InstallError and Status say why (this package never prints: `mhalab backends` and
// notebooks/nb show it), and MHALAB_FASTGO=force installs it anyway.
//
// # What it does
//
//   - The GEMM (gemm.go) follows the published BLIS/Goto design: the contracting axis is cut in
//     kc-deep slices, B into kc×nc panels and A into mc×kc blocks, each packed into micro-panels
//     (packPanels) so that a micro-kernel computes an mr×nr tile of C in registers reading both
//     panels sequentially. Output tiles are spread over the team's helpers (below; as many
//     as simplego's parallelism setting allows).
//   - Micro-kernels: a plain-Go 2×2 kernel everywhere (kernel_go.go), no cgo. Which one runs:
//     Kernel. float32 runs assembly kernels for AVX-512 (kernel_avx512.go, 4×64 tiles) and AVX2
//     (kernel_avx2.go, 4×16), chosen in kernel_f32.go, in every amd64 build, GOEXPERIMENT or
//     not: they broadcast A's values from memory, which archsimd cannot, and run a whole column
//     of row groups per call; tileFMAN (their tests) is their definition in plain Go, with the
//     same bits. float64 runs AVX-512 or AVX2 kernels written with simd/archsimd
//     (kernel_simd.go), built with GOEXPERIMENT=simd on amd64 with Go 1.26.
//   - Any DotGeneral layout (transposed operands, several batch or contracting axes in any order)
//     is read through per-axis offset tables (offsets), so no layout falls back; float32 and
//     float64 are computed here, every other dtype goes to GoMLX's kernel.
//   - Element-wise executors (elementwise.go and one file per op): after the GEMM, a profile of
//     mhalib's attention on this backend spent most of its time in ops GoMLX computes element by
//     element on one goroutine — softmax's Exp and ReduceMax, BroadcastInDim, Sub/Mul/Div, and
//     the Transposes and Gathers with which mhalib slices tensors here (the backend has no Pad,
//     so Slice cannot be differentiated). Each executor handles the common cases (float32 and
//     float64, the layouts attention produces) — cut into ranges over goroutines, copies of
//     runs instead of index iterators, vector loops for exp, row sums and float32
//     Add/Sub/Mul/Div — and hands the rest to GoMLX's executor. Small broadcasts that come down
//     to rows (a row of values for every row, or one value per row: a decoding step's RoPE
//     tables and softmax sums) skip the general plan (binary_rows.go).
//     Results equal GoMLX's bit for bit (float32 Erf too: erf.go), except Exp in float32 (within
//     2 ulp; GoMLX rounds float64's exp), float32 Logistic (1 ulp at rare double roundings) and
//     float32 ReduceSum along rows (added in vector lanes: within
//     (n+1)·u·Σ|x| of the exact sum) — tests compare every op with GoMLX's kernel. Ops lists
//     them, OpCalls counts.
//   - Fused passes (fuse.go): on a tile of attention scores s = q·kᵀ the GEMM takes the rows'
//     maxima m while the rows are in the cache (for the ReduceMax that follows), and a Sub s − m
//     whose one use is an Exp computes exp(s − m) and the rows' sums (for a ReduceSum over the
//     last axis) in one pass; the Exp and the reductions then hand those results on. When the
//     Exp's one other use is a product e·v that comes before the sum in the graph (flashrows'
//     tiles), the Sub hands on s itself and the product makes e a few rows at a time in the
//     cache (fuse_expdot.go): e never goes to memory. The executors find these patterns in
//     the graph (the nodes' users, read from simplego's unexported fields); the values are
//     those of the executors run apart, bit for bit. A Sub of +0, Add of −0, Mul or Div by 1
//     hands its operand on without a pass (binary.go, identityOperand).
//   - Rows read in place (gatherview.go): a Gather of consecutive rows whose only readers are
//     DotGenerals (flash attention's blocks of queries, chunks of keys and values, the slices of
//     a fused projection weight) leaves its output unwritten, and the products read the rows in
//     the operand's buffer — only with simplego's "ops_sequential" option and when the graph
//     shows the operand's buffer outlives them; the values are those of the copies, bit for bit.
//   - Grouped decoding products (grouprows.go, grouprows_simd.go): with grouped-query
//     attention, a decoding step's g ≤ 32 query rows per key/value head against a cache of
//     64-feature rows — scores q·Kᵀ and the weighted sum w·V — are read where the cache lies
//     (no gather of the rows, no packing of V or K), with vector kernels; gemv and the GEMM
//     take the rest.
//   - Packed matrices (quant.go, quant_go.go, quant_simd.go): a DotGeneral whose right operand
//     is a models/quant carrier (a float32 tensor holding a Q8_0/Q4_1 matrix's blocks behind a
//     checked header) is computed by a matrix–vector kernel that multiplies each 32-weight
//     block's quants by x rounded to 16-bit blocks in integers and scales the sum (AVX-512 or
//     AVX2, plain Go otherwise; a prompt's rows dequantise to float32 instead), whether or not the
//     fast path is switched on — no other executor computes a carrier. QuantKernel names the
//     kernel. Where the AVX2 kernels run, carriers are built in the "lanes of 8" layout
//     (models/quant.Lanes8, quant_lanes8*.go: each block's quants ordered as the 8-lane vectors
//     consume them, the layout recorded in the checksummed header); other kernels read the
//     planar layout, and a carrier in the other layout is converted, never misread. The vector kernels prefetch the rows ahead of the ones they compute
//     (prefetch_simd_amd64.s, a PREFETCHT0 loop, assembly like the AVX2 GEMM kernel — Go offers no
//     prefetch outside its runtime); without it they read a token's ~96 MB at a third of the
//     machine's read bandwidth (BenchmarkQuantStream).
//   - Parallel ops and the GEMM's tasks run on a team of helper goroutines that poll for the
//     next job between ops (team.go) instead of goroutines started per op. While they poll during a decoding step's
//     one-core ops, they bring the rows of the packed matrices predicted next (the order of the
//     last step) into the caches (warm.go; BenchmarkWarmDecode).
//   - Vector loops come in three levels, picked once at start: AVX-512 where the CPU has it,
//     else AVX2 with FMA (most laptops; AMD EPYC before Zen 4) in the *_avx2.go files, else
//     plain Go. Each AVX2 loop keeps its AVX-512 twin's contract (the same bits where that one
//     promises them) and its tests run it on AVX-512 CPUs too. Status names the level in use.
//     Every vector kernel ends with VZEROUPPER: see "Clean upper halves" below.
//   - Scatters (scatter.go): ScatterMax/Min/Sum that combine whole float32 rows (the one-position
//     KV-cache update of models/smollm2) run one loop per row instead of GoMLX's index iterators.
//   - Gradients: GoMLX v0.26 differentiates DotGeneral as a broadcast multiply and a reduce-sum
//     (a [batch, m, n, k] intermediate). Importing this package calls mhalib/dotgrad's Install,
//     which registers the gradient as two DotGenerals for every graph built afterwards (on every
//     backend; not with MHALAB_FASTGO=0). dotgrad is the one owner of that entry of GoMLX's
//     gradient table; this package has no rule of its own.
//
// # Clean upper halves
//
// Go 1.26 compiles scalar float code, struct zeroing and some register spills to legacy-SSE
// instructions (MOVSS, ADDSS, XORPS, MOVUPS) and does not emit VZEROUPPER after 256- or 512-bit
// code. On the 2-core AMD EPYC (Zen 3) this package is measured on, a legacy-SSE instruction run
// while the upper halves of the vector registers are dirty stalled the following instructions for
// hundreds of cycles: sumF32AVX2 on 128 values took 131 ns, 13 ns with VZEROUPPER before its
// scalar tail; the logistic loop 30.4 µs per 1536 values, 4.1 µs with its constants loaded as
// whole vectors instead of broadcast from float64 scalars (perf annotate put 85% of the samples
// on the instructions after the legacy ones). So every vector kernel ends with
// archsimd.ClearAVXUpperBits, placed after its last store: the compiler orders it with memory
// operations only, and moved it above the register arithmetic it followed in the source (then
// spilled every vector register around it). Kernels that return a scalar store their last vector
// to an array first and read the lanes after the VZEROUPPER. scripts/sse_audit.py lists the
// functions of a binary that still run legacy SSE after vector code.
//
// # The decision and its risks
//
// simplego keeps its executors in an unexported table filled by an unexported setNodeExecutor,
// which reserves a priority for "custom user overrides" (100). This package reaches it with
// //go:linkname (hook.go), installs its executor at that priority, and calls GoMLX's own
// execDotGeneral (also through //go:linkname) for what it does not compute. It builds and links
// with plain `go build` / `go test` / GoNB — the linker's -checklinkname restriction (Go 1.23+)
// covers the standard library only. The node parameters (simplego's unexported
// dotGeneralNodeData and gatherNode, graph's nodeInputsDotGeneral) are read with reflection,
// which fails softly: a missing or changed field makes it fall back to GoMLX (Status names the
// reason). The element-wise executors read a node's output shape and parameter (simplego.Node's
// unexported `shape` and `data` fields) through offsets that reflection finds at start-up, after
// checking the fields' types; if they differ, those executors are not installed at all.
//
// Risks, all tied to the pinned github.com/gomlx/gomlx v0.26.0 (the only version served here):
//   - another GoMLX version may rename or change setNodeExecutor or the executors it falls back
//     to (execDotGeneral, execExp, execTranspose …); the build then fails to link (loudly) or,
//     if a signature changed, would misbehave — which is why nothing is installed unless the
//     linked GoMLX is GoMLXVersion (later GoMLX versions have their own SIMD matmul, and this
//     package should then rather be deleted);
//   - simd/archsimd is experimental: its API changes in Go 1.27, so the SIMD files build only
//     with Go 1.26 (build tag !go1.27) and anything else gets the plain-Go kernel;
//   - results differ from GoMLX's kernel in rounding (another summation order, fused
//     multiply-add): within 2(k+1)·u·Σ|a·b| of the exact value, as the tests check; float32 Exp
//     within 2 ulp of GoMLX's;
//   - the executors start goroutines inside simplego's own parallel execution of independent
//     nodes: at most as many as simplego's parallelism setting (GOMAXPROCS by default) per op.
//     They never wait for a slot of simplego's worker pool. GoMLX v0.26.0's own DotGeneral does,
//     from inside a pool task, and can deadlock when several run at once on a machine with few
//     CPUs (TestManyDotGeneralsInParallel shows the graph): with fastgo off (MHALAB_FASTGO=0,
//     SetEnabled(false)) or for the dtypes it hands back to GoMLX (not float32/float64), the
//     "go" backend needs simplego's "ops_sequential" option, which xla.New gives it
//     (xla.SimpleGoConfig: the command, notebooks, lessons and tests get their backends there);
//     a program calling simplego.New itself passes it (GOMLX_BACKEND="go:ops_sequential").
//
// # On a GoMLX upgrade
//
// With a new github.com/gomlx/gomlx in go.mod this package installs nothing (TestHookActive
// fails, saying so) until GoMLXVersion names the new version, and that is changed only after
// checking, in the new GoMLX's source:
//
//  1. backends/simplego: setNodeExecutor(opType backends.OpType, priority, executor) exists
//     with the nodeExecutor signature of hook.go, priorityUser is still 100, and each of the 21
//     functions named by a //go:linkname here exists with the same signature: setNodeExecutor,
//     execDotGeneral, execAdd, execSub, execMul, execDiv, execMax, execMin, execBroadcastInDim,
//     execGather, execReduce, execIsFinite, execWhere, execIdentity, execTranspose, execExp,
//     execLogistic, execErf, execSlice, execScatter, execConcatenate (`grep -rn go:linkname fastgo/`
//     lists them).
//  2. simplego.Node still has the fields `shape shapes.Shape` and `data any` (node.go reads
//     them by offset) and `inputs []*Node`, `opType backends.OpType`, `builder *Builder`,
//     simplego.Builder `nodes, outputs []*Node` (fuse.go; each checked at start-up: nothing is
//     fused without them), simplego.Backend `opsExecutionType int` with sequential = 2, and
//     executeSequentially still runs nodes in builder order, skips those no output reaches and
//     releases a buffer only at its last counted use when the execution owns it (gatherview.go:
//     rows are read in place only under those rules), a DotGeneral is still followed by a Reshape that hands its buffer on,
//     a Concatenate's data is its axis (an int), and the `data` of Transpose, ReduceMax/Sum and BroadcastInDim is still
//     an []int with the meaning node.go documents; Gather's data is still *gatherNode with the
//     fields gather.go reads, Scatter's *scatterNode with those scatter.go reads; dotGeneralNodeData's fields are those readDotParams (params.go)
//     reads.
//  3. graph's nodeInputsDotGeneral still has lhsContractingAxes, lhsBatchAxes,
//     rhsContractingAxes, rhsBatchAxes (mhalib/dotgrad reads them; it falls back to GoMLX's
//     rule if not).
//  4. Then, with GoMLXVersion changed: go test ./fastgo/ ./mhalib/dotgrad/ — TestHookActive and
//     every *MatchesGoMLX test must pass (they compare each executor with GoMLX's own), and
//     `mhalab bench --backends go,go-gomlx` shows the speed-up still exists (later GoMLX
//     versions have their own SIMD matmul: if fastgo no longer wins, delete it).
package fastgo
