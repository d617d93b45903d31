package mhalib

// Internal values the external tests (package mhalib_test) check.

// GoMLXDotGeneralVJPForTest is GoMLX's own DotGeneral gradient, as registered before mhalib's.
var GoMLXDotGeneralVJPForTest = goMLXDotGeneralVJP
