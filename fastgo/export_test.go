package fastgo

// GroupRowsCalls counts the products groupRows computed (for the decoding test).
var GroupRowsCalls = &groupCalls

// SetGroupRows switches groupRows on or off and returns the previous setting.
func SetGroupRows(on bool) bool {
	prev := useGroupRows
	useGroupRows = on
	return prev
}
