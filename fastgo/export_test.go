package fastgo

// GroupRowsCalls counts the products groupRows computed (for the decoding test).
var GroupRowsCalls = &groupCalls

// SetGroupRows switches groupRows on or off and returns the previous setting.
func SetGroupRows(on bool) bool {
	prev := useGroupRows
	useGroupRows = on
	return prev
}

// FusedCalls counts the Subs computed as exp(s − m) (fuse.go).
var FusedCalls = &fusedCalls

// SetFuse switches fusing Sub, Exp and ReduceSum (fuse.go) on or off and returns the previous
// setting.
func SetFuse(on bool) bool { return fuseOn.Swap(on) }

// FusedMaxCalls counts the DotGenerals that left their rows' maxima for a ReduceMax (fuse.go).
var FusedMaxCalls = &fusedMaxCalls

// DeferredCalls counts the Subs that left s for a DotGeneral to make e (fuse_expdot.go);
// ExpDotCalls the DotGenerals that made it.
var DeferredCalls, ExpDotCalls = &deferredCalls, &expDotCalls

// InPlaceValueCalls counts the products that made e and read the values in place (fuse_expdot.go).
var InPlaceValueCalls = &inPlaceValueCalls

// SetExpDotAnyOrder lets a Sub defer to its product even when the sum comes first in the graph
// (fuse_expdot.go), and returns the previous setting.
func SetExpDotAnyOrder(on bool) bool { return expDotAnyOrder.Swap(on) }

// KernelNR is the float32 micro-kernel's panel width (columns of B per micro-panel).
func KernelNR() int { return kernelF32.nr }

// IdentityOperandCalls counts the binary ops whose output was an operand handed over as it is
// (x − (+0), x + (−0), x·1, x/1: binary.go).
var IdentityOperandCalls = &identityOperandCalls

// RowViewCalls counts the Gathers that left their rows where they were, RowViewReads the
// products that read such rows (gatherview.go).
var RowViewCalls, RowViewReads = &rowViewCalls, &rowViewReads

// SetRowViews switches lazy Gathers (gatherview.go) on or off and returns the previous setting.
func SetRowViews(on bool) bool { return rowViewsOn.Swap(on) }
