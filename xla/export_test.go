package xla

// Internals for the external tests (package xla_test).
var (
	ReadTHPMode  = readTHPMode
	GlibcVersion = glibcVersion
	GlibcAtLeast = glibcAtLeast
)
