package cli

// Given is the set of flags given on the command line, by name without dashes ("scale"). A
// command whose meaning depends on whether a flag was given at all — --scale 0 is not "no
// --scale", --window-left -1 given is an error while its default is "unbounded" — reads it from
// its options' Given; cmd/mhalab fills it from the flag set, a test sets it directly.
type Given map[string]bool
