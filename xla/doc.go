// Package xla chooses and creates the GoMLX backend mhalab runs on, and reports which
// backends this machine has.
//
// # Backends
//
// Three backend specs are valid (see Specs):
//
//   - "go": GoMLX's pure-Go backend (simplego). Always available, slow on large matrices.
//   - "xla:cpu": XLA through the PJRT CPU plugin pjrt_c_api_cpu_plugin.so, installed by
//     scripts/setup.sh from the PyPI wheel xla-cpu-pjrt 0.0.1 (PJRT C API 0.81).
//   - "xla:cuda": XLA through a PJRT CUDA plugin pjrt_c_api_cuda_plugin.so (not installed by
//     scripts/setup.sh; needs an NVIDIA GPU).
//
// The empty spec picks a default: $GOMLX_BACKEND when set, else "xla:cpu" when its plugin
// loads, else "go". NewWithReason says which one it chose and why; New prints that reason
// to stderr.
//
// # Plugins
//
// Plugins are searched, first file found wins, in $MHALAB_PLUGIN_DIR (when set), then in the
// directories of $PJRT_PLUGIN_LIBRARY_PATH (when set) or else go-xla's defaults
// (~/.local/lib/go-xla, /usr/local/lib/go-xla, …), then $LD_LIBRARY_PATH. PluginDirs lists
// them. A plugin is always loaded by its absolute path, so GoMLX never searches or downloads
// one itself, and GoMLX's automatic download (it reaches GitHub) is turned off when this
// package creates an XLA backend.
//
// # No side effects on import
//
// Importing the package changes nothing in the process: it has no init function. $XLA_FLAGS is
// set only by EnableHLODump, which a program that wants OptimizedHLO calls before its first XLA
// backend (XLA reads $XLA_FLAGS once per process, when the first XLA client is created).
//
// A file with a plugin's name that is not a PJRT plugin (not an ELF shared object, or without
// the GetPjrtApi symbol) is reported as an error by CheckPlugin, Available and New; it is
// never handed to dlopen. go-xla's own search (pjrt.AvailablePlugins, and GoMLX's
// backends.New that uses it) crashes on such a file, which is one reason to create backends
// here.
package xla
