package xla

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	"github.com/gomlx/gomlx/backends"
	"github.com/gomlx/gomlx/pkg/core/shapes"
	"github.com/gomlx/gomlx/pkg/core/tensors"
	"github.com/gomlx/gomlx/pkg/ml/context"
	"k8s.io/klog/v2"
)

// Views of what XLA makes of a graph:
//
//	StableHLO     the program GoMLX hands to XLA (MLIR text, one stablehlo.* op per graph op)
//	OptimizedHLO  the HLO module before and after XLA's optimisation passes, with fusions counted
//
// Both compile the graph once on an XLA backend ("xla:cpu" or "xla:cuda") and do not run it.
//
// How the texts are obtained. GoMLX v0.26 builds the StableHLO program inside its XLA
// backend's Compile and keeps it there (go-xla v0.1.4's pjrt package has no call that returns a
// compiled executable's program either: PJRT_Executable_OptimizedProgram is wrapped in C only);
// its one public trace is a klog message at verbosity 2. So StableHLO raises klog's verbosity
// to 2 for the length of one compilation and routes klog into a buffer meanwhile.
//
// XLA writes its HLO only through its dump flags, which it reads from $XLA_FLAGS once per
// process, when the process creates its first XLA (PJRT) client: setting the variable later
// changes nothing. Importing this package does not touch $XLA_FLAGS: a program that wants
// OptimizedHLO calls EnableHLODump before it creates its first XLA backend (mhalab hlo does).
// EnableHLODump appends to $XLA_FLAGS a dump folder that does not exist yet and a module
// filter that matches only the graphs OptimizedHLO compiles (named "mhalab_hlo_dump_N"); other
// graphs are never dumped. XLA creates the folder when OptimizedHLO compiles; OptimizedHLO reads
// its files and removes them and the folder. If $XLA_FLAGS already names a dump folder
// (--xla_dump_to), EnableHLODump returns an error saying so.

const (
	// dumpModulePrefix starts the name of every graph OptimizedHLO compiles; XLA dumps only those.
	dumpModulePrefix = "mhalab_hlo_dump_"
	// stableHLOModulePrefix starts the name of every graph StableHLO compiles.
	stableHLOModulePrefix = "mhalab_stablehlo_"
	xlaFlagsEnv           = "XLA_FLAGS"
)

var (
	hloMu      sync.Mutex   // one compilation at a time captures klog or reads dumps
	hloCounter atomic.Int64 // numbers the graphs StableHLO and OptimizedHLO compile

	dumpMu sync.Mutex
	// dumpDir is the folder XLA dumps OptimizedHLO's modules into, set by EnableHLODump;
	// empty before.
	dumpDir string
	// clientCreated is set when this package creates an XLA client (a backend, or Available):
	// from then on XLA has read $XLA_FLAGS.
	clientCreated atomic.Bool
)

// EnableHLODump sets $XLA_FLAGS so that XLA dumps the HLO of the graphs OptimizedHLO
// compiles, and only those. XLA reads $XLA_FLAGS once per process, when the first XLA client
// is created, so call EnableHLODump before the process creates its first XLA backend (New,
// NewWithReason, Available); it returns an error when this package has already created one,
// or when $XLA_FLAGS already sets --xla_dump_to. Calling it again is harmless.
func EnableHLODump() error {
	dumpMu.Lock()
	defer dumpMu.Unlock()
	if dumpDir != "" {
		return nil
	}
	if clientCreated.Load() {
		return fmt.Errorf("xla: EnableHLODump called after an XLA backend was created: XLA has already read $%s (once per process, at its first client); call it first", xlaFlagsEnv)
	}
	flags := os.Getenv(xlaFlagsEnv)
	if strings.Contains(flags, "--xla_dump_to") {
		return fmt.Errorf("xla: $%s already sets --xla_dump_to (%q), so OptimizedHLO cannot choose where XLA dumps; unset it", xlaFlagsEnv, flags)
	}
	// Not created here: XLA creates it when it dumps a module matching the filter.
	dir := filepath.Join(os.TempDir(), fmt.Sprintf("mhalab-xla-dump-%d-%x", os.Getpid(), time.Now().UnixNano()))
	ours := fmt.Sprintf("--xla_dump_to=%s --xla_dump_hlo_as_text --xla_dump_hlo_module_re=^%s", dir, dumpModulePrefix)
	if flags != "" {
		ours = flags + " " + ours
	}
	if err := os.Setenv(xlaFlagsEnv, ours); err != nil {
		return fmt.Errorf("xla: setting $%s: %w", xlaFlagsEnv, err)
	}
	dumpDir = dir
	return nil
}

// hloDumpDir returns the folder set by EnableHLODump, or an error saying it was not called.
func hloDumpDir() (string, error) {
	dumpMu.Lock()
	defer dumpMu.Unlock()
	if dumpDir == "" {
		return "", fmt.Errorf("xla: OptimizedHLO needs XLA's dump flags: call xla.EnableHLODump before creating the first XLA backend of the process (XLA reads $%s once, at its first client)", xlaFlagsEnv)
	}
	return dumpDir, nil
}

// checkXLA returns an error unless b is an XLA backend.
func checkXLA(b backends.Backend, what string) error {
	if b == nil {
		return fmt.Errorf("xla: %s: backend is nil", what)
	}
	if b.Name() != "xla" {
		return fmt.Errorf("xla: %s needs an XLA backend (%s or %s), got %q: the pure-Go backend does not compile to HLO", what, SpecCPU, SpecCUDA, b.Name())
	}
	return nil
}

// compileGraph compiles graphFn (any function context.NewExecAny accepts: the context first,
// then *Node inputs or one []*Node, returning *Node values or a []*Node) for inputs of the
// given shapes, naming the graph name. Variables are created with ctx's initialisers; their
// initialisation graph is compiled separately (under another name).
func compileGraph(backend backends.Backend, ctx *context.Context, graphFn any, name string, dist *Distribution, inputShapes []shapes.Shape) error {
	if ctx == nil {
		ctx = context.New()
	}
	exec, err := context.NewExecAny(backend, ctx, graphFn)
	if err != nil {
		return fmt.Errorf("xla: graph function %T: %w", graphFn, err)
	}
	defer exec.Finalize()
	exec.WithName(name)
	devices := 1
	if dist != nil {
		if exec, err = dist.configure(backend, exec); err != nil {
			return err
		}
		devices = dist.Mesh.NumDevices()
	}
	var args []any
	for range devices {
		for i, s := range inputShapes {
			if !s.Ok() {
				return fmt.Errorf("xla: input shape #%d is invalid (%s)", i, s)
			}
			args = append(args, tensors.FromShape(s))
		}
	}
	return exec.PreCompile(args...)
}

// StableHLO returns the StableHLO program (MLIR text, as XLA receives it from GoMLX) of the
// graph graphFn builds for inputs of the given shapes. graphFn is any function that
// context.NewExec accepts, e.g.
//
//	func(ctx *context.Context, x *graph.Node) *graph.Node   // x: inputShapes[0]
//
// ctx holds the variables (nil: a new context); they are created and initialised as by an
// Exec. backend must be an XLA backend; the graph is compiled, never run. Not safe to call
// while other goroutines log with klog: klog's verbosity is raised to 2 meanwhile.
func StableHLO(backend backends.Backend, ctx *context.Context, graphFn any, inputShapes ...shapes.Shape) (string, error) {
	if err := checkXLA(backend, "StableHLO"); err != nil {
		return "", err
	}
	hloMu.Lock()
	defer hloMu.Unlock()
	name := fmt.Sprintf("%s%d", stableHLOModulePrefix, hloCounter.Add(1))

	sink := &captureSink{}
	restore, err := raiseKlogVerbosity(2)
	if err != nil {
		return "", err
	}
	klog.SetLogger(logr.New(sink))
	err = func() error {
		defer restore()
		defer klog.ClearLogger()
		return compileGraph(backend, ctx, graphFn, name, nil, inputShapes)
	}()
	if err != nil {
		return "", fmt.Errorf("xla: StableHLO: compiling the graph: %w", err)
	}
	const marker = "StableHLO program:\n"
	for _, msg := range sink.messages() {
		program, ok := strings.CutPrefix(msg, marker)
		if !ok {
			continue
		}
		// GoMLX normalises the graph name "<name>#0" into an identifier; the program of the
		// variable-initialisation graph, compiled in the same call, does not contain it.
		if strings.Contains(program, name) {
			return strings.TrimRight(program, "\n") + "\n", nil
		}
	}
	return "", fmt.Errorf("xla: StableHLO: GoMLX did not log the StableHLO program of %q (klog verbosity 2); this GoMLX version may log it differently", name)
}

// raiseKlogVerbosity sets klog's -v to at least level and returns a function restoring it.
func raiseKlogVerbosity(level int) (restore func(), err error) {
	fs := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(fs)
	v := fs.Lookup("v")
	if v == nil {
		return nil, errors.New("xla: klog has no -v flag")
	}
	old := v.Value.String()
	var cur int
	if _, err := fmt.Sscan(old, &cur); err == nil && cur >= level {
		return func() {}, nil
	}
	if err := fs.Set("v", fmt.Sprint(level)); err != nil {
		return nil, fmt.Errorf("xla: raising klog verbosity: %w", err)
	}
	return func() { _ = fs.Set("v", old) }, nil
}

// captureSink is a logr.LogSink that keeps every message.
type captureSink struct {
	mu   sync.Mutex
	msgs []string
}

func (s *captureSink) Init(logr.RuntimeInfo)  {}
func (s *captureSink) Enabled(level int) bool { return true }
func (s *captureSink) Info(level int, msg string, keysAndValues ...any) {
	s.mu.Lock()
	s.msgs = append(s.msgs, msg)
	s.mu.Unlock()
}
func (s *captureSink) Error(err error, msg string, keysAndValues ...any) {}
func (s *captureSink) WithValues(keysAndValues ...any) logr.LogSink      { return s }
func (s *captureSink) WithName(name string) logr.LogSink                 { return s }
func (s *captureSink) messages() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.msgs...)
}

// HLODump is what XLA's dump flags show of one compiled graph.
type HLODump struct {
	// Before is the HLO module XLA received (GoMLX's StableHLO converted to HLO), before its
	// optimisation passes.
	Before string
	// After is the HLO module after XLA's optimisation passes: what the backend runs.
	After string
	// Fusions is the number of fusion instructions in After: each is one kernel that computes
	// several HLO ops without writing the intermediate results to memory.
	Fusions int
	// TempBytes is the size of the scratch memory XLA's buffer assignment reserves for the
	// intermediate values of one execution (its "preallocated-temp" allocations).
	TempBytes int64
	// TotalBytes is all the memory buffer assignment reserves: parameters, outputs,
	// constants and TempBytes ("Total bytes used" of XLA's memory usage report).
	TotalBytes int64
}

// OptimizedHLO compiles the graph graphFn builds for inputs of the given shapes (graphFn and
// ctx as for StableHLO) on an XLA backend and returns XLA's HLO of it before and after
// optimisation, with the number of fusions. XLA dumps the modules into a temporary folder
// (see the top of hlo.go), which is removed before OptimizedHLO returns.
func OptimizedHLO(backend backends.Backend, ctx *context.Context, graphFn any, inputShapes ...shapes.Shape) (*HLODump, error) {
	return OptimizedHLOFor(backend, ctx, graphFn, nil, inputShapes...)
}

// OptimizedHLOFor is OptimizedHLO for a graph compiled for several devices as dist says (nil:
// one device). inputShapes are then the shapes of one device's inputs (its shards); the HLO
// is one device's program, with its collectives (Collectives reads them).
func OptimizedHLOFor(backend backends.Backend, ctx *context.Context, graphFn any, dist *Distribution, inputShapes ...shapes.Shape) (*HLODump, error) {
	if err := checkXLA(backend, "OptimizedHLO"); err != nil {
		return nil, err
	}
	dir, err := hloDumpDir()
	if err != nil {
		return nil, err
	}
	hloMu.Lock()
	defer hloMu.Unlock()
	name := fmt.Sprintf("%s%d", dumpModulePrefix, hloCounter.Add(1))
	// XLA names the module after GoMLX's graph name "<name>#0", normalised to an identifier.
	filePrefix := name + "_0."
	defer removeDump(dir, filePrefix)
	if err := compileGraph(backend, ctx, graphFn, name, dist, inputShapes); err != nil {
		return nil, fmt.Errorf("xla: OptimizedHLO: compiling the graph: %w", err)
	}
	find := func(suffix string) (string, error) {
		matches, _ := filepath.Glob(filepath.Join(dir, "module_*."+filePrefix+suffix))
		if len(matches) != 1 {
			return "", fmt.Errorf("xla: OptimizedHLO: XLA dumped %d files named *.%s%s in %s (want 1); was xla.EnableHLODump called before the first XLA backend of this process was created? $%s is %q",
				len(matches), filePrefix, suffix, dir, xlaFlagsEnv, os.Getenv(xlaFlagsEnv))
		}
		b, err := os.ReadFile(matches[0])
		if err != nil {
			return "", fmt.Errorf("xla: OptimizedHLO: %w", err)
		}
		return string(b), nil
	}
	before, err := find("before_optimizations.txt")
	if err != nil {
		return nil, err
	}
	// The CPU backend writes "cpu_after_optimizations.txt", the GPU one "gpu_after_optimizations.txt".
	after, err := find("*_after_optimizations.txt")
	if err != nil {
		return nil, err
	}
	buffers, err := find("*_after_optimizations-buffer-assignment.txt")
	if err != nil {
		return nil, err
	}
	dump := &HLODump{Before: before, After: after, Fusions: CountFusions(after)}
	dump.TempBytes, dump.TotalBytes, err = parseBufferAssignment(buffers)
	if err != nil {
		return nil, err
	}
	return dump, nil
}

var (
	tempAllocation = regexp.MustCompile(`(?m)^allocation \d+: size (\d+), preallocated-temp`)
	totalBytesUsed = regexp.MustCompile(`(?m)^Total bytes used: (\d+)`)
)

// parseBufferAssignment reads the temp and total sizes from XLA's buffer assignment dump.
func parseBufferAssignment(text string) (temp, total int64, err error) {
	for _, m := range tempAllocation.FindAllStringSubmatch(text, -1) {
		var n int64
		fmt.Sscan(m[1], &n)
		temp += n
	}
	m := totalBytesUsed.FindStringSubmatch(text)
	if m == nil {
		return 0, 0, errors.New("xla: OptimizedHLO: no \"Total bytes used\" in XLA's buffer assignment dump")
	}
	fmt.Sscan(m[1], &total)
	return temp, total, nil
}

// removeDump removes the files of one module from the dump folder dir, and the folder when
// empty.
func removeDump(dir, filePrefix string) {
	matches, _ := filepath.Glob(filepath.Join(dir, "*."+filePrefix+"*"))
	for _, m := range matches {
		_ = os.RemoveAll(m)
	}
	_ = os.Remove(dir) // only succeeds when empty: other modules may be being dumped
}

// hloInstruction matches one HLO instruction line: "%name = f32[2,3]{1,0} opcode(...", with
// an optional "ROOT". The opcode is the first identifier followed by "(" after the type.
var hloInstruction = regexp.MustCompile(`^\s*(?:ROOT\s+)?%?[\w.\-]+\s*=\s*.*?\s([a-z][a-z0-9\-_]*)\(`)

// EntryOps counts the instructions of an HLO module's ENTRY computation by opcode
// (e.g. {"dot": 6, "fusion": 9, "parameter": 8}). Instructions inside fused or called
// computations are not counted: after optimisation they run inside their fusion.
func EntryOps(hlo string) map[string]int {
	counts := map[string]int{}
	inEntry := false
	for _, line := range strings.Split(hlo, "\n") {
		trimmed := strings.TrimSpace(line)
		switch {
		case strings.HasPrefix(trimmed, "ENTRY "):
			inEntry = true
			continue
		case inEntry && trimmed == "}":
			inEntry = false
			continue
		case !inEntry:
			continue
		}
		if m := hloInstruction.FindStringSubmatch(line); m != nil {
			counts[m[1]]++
		}
	}
	return counts
}

// CountFusions returns the number of fusion instructions in an HLO module, in every
// computation that is not itself fused.
func CountFusions(hlo string) int {
	n := 0
	for _, line := range strings.Split(hlo, "\n") {
		if m := hloInstruction.FindStringSubmatch(line); m != nil && m[1] == "fusion" && strings.Contains(line, "kind=k") {
			n++
		}
	}
	return n
}

// stableHLOOp matches an operation in StableHLO text as go-xla writes it (MLIR's generic
// form): `%7 = "stablehlo.dot_general"(%arg0, %1) {…}`, `"stablehlo.return"(%3)`. Attributes
// such as `#stablehlo.dot<…>` are not operations and do not match.
var stableHLOOp = regexp.MustCompile(`"(stablehlo|chlo)\.(\w+)"\(`)

// StableHLOOps counts the operations of a StableHLO program by name
// (e.g. {"stablehlo.dot_general": 6, "stablehlo.add": 4}), in every function.
func StableHLOOps(program string) map[string]int {
	counts := map[string]int{}
	for _, line := range strings.Split(program, "\n") {
		for _, m := range stableHLOOp.FindAllStringSubmatch(line, -1) {
			counts[m[1]+"."+m[2]]++
		}
	}
	return counts
}

// TotalOps sums the counts of EntryOps or StableHLOOps, leaving out the ops named in skip
// (e.g. "parameter", "constant", "tuple", "get-tuple-element").
func TotalOps(counts map[string]int, skip ...string) int {
	n := 0
	for op, c := range counts {
		skipped := false
		for _, s := range skip {
			if op == s {
				skipped = true
				break
			}
		}
		if !skipped {
			n += c
		}
	}
	return n
}

// FormatOps formats op counts as "dot_general 6, add 4, …", most frequent first (then by name).
func FormatOps(counts map[string]int) string {
	names := make([]string, 0, len(counts))
	for op := range counts {
		names = append(names, op)
	}
	sort.Slice(names, func(i, j int) bool {
		if counts[names[i]] != counts[names[j]] {
			return counts[names[i]] > counts[names[j]]
		}
		return names[i] < names[j]
	})
	parts := make([]string, len(names))
	for i, op := range names {
		parts[i] = fmt.Sprintf("%s %d", op, counts[op])
	}
	return strings.Join(parts, ", ")
}
