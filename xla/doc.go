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
// backend (XLA reads $XLA_FLAGS once per process, when the first XLA client is created), and
// when the CUDA plugin is first loaded (below).
//
// # Full float32 on xla:cuda
//
// XLA on an NVIDIA GPU rounds a float32 matrix product's inputs to TensorFloat-32 (10 bits of
// mantissa) unless told otherwise, and GoMLX cannot tell it otherwise; PyTorch does not by
// default, and mhalib's parity with PyTorch fails with it. Before it first loads the CUDA plugin
// the package sets $NVIDIA_TF32_OVERRIDE=0 and appends --xla_gpu_enable_triton_gemm=false to
// $XLA_FLAGS, each unless the user set it; $MHALAB_CUDA_TF32=1 keeps XLA's TF32 (faster, about
// 1e-3 relative error). The backend's description says which ("TF32 off").
//
// # Releasing a backend
//
// Close(b) is b.Finalize once the device buffers of dropped tensors have been freed: go-xla frees
// them on the garbage collector's goroutine and does not wait for that when it destroys the
// client, which crashed a program that finalized an xla:cuda backend at its end.
//
// # The C allocator under xla:cpu
//
// Creating an "xla:cpu" backend (New, NewWithReason) raises, once per process, glibc malloc's
// mmap threshold to MallocMmapThreshold (64 MiB) and its trim threshold to MallocTrimThreshold
// (128 MiB) with mallopt. XLA allocates each execution's temporary buffers with malloc; above
// glibc's default threshold (at most 32 MiB) every execution mapped them afresh and faulted in
// and zeroed every page again — for multi-head attention at B32 L128 E512 h8 (40 MiB of
// temporaries) ~10,800 page faults and about a sixth of the CPU time per pass. A threshold the
// user set ($MALLOC_MMAP_THRESHOLD_, $MALLOC_TRIM_THRESHOLD_, or glibc.malloc.mmap_threshold /
// glibc.malloc.trim_threshold in $GLIBC_TUNABLES) is left as the user set it. The cost: up to
// 128 MiB of freed memory stays in the process for reuse instead of going back to the system.
// Other C libraries (and builds without cgo) are left alone.
//
// Those thresholds do not reach a block above 64 MiB that XLA allocates on one of its worker
// threads: glibc's per-thread arenas cannot hold it, so it is mapped and faulted in again in
// every execution (causal attention at B1 L4096 E512 h8 has a 108 MiB block). A program can be
// started with GLIBC_TUNABLES=glibc.malloc.hugetlb=1, which makes glibc ask for transparent huge
// pages for the blocks it maps, 2 MiB per fault instead of 4 KiB. ExecWithHugePages, called
// first in main, starts the running program again with that setting where it helps (Linux,
// glibc 2.35 or later, the kernel's transparent huge pages in "madvise" mode) and does nothing
// elsewhere; the mhalab command calls it (MHALAB_HUGEPAGES=0 turns it off). Importing the
// package never does: a program opts in.
//
// A file with a plugin's name that is not a PJRT plugin (not an ELF shared object, or without
// the GetPjrtApi symbol) is reported as an error by CheckPlugin, Available and New; it is
// never handed to dlopen. go-xla's own search (pjrt.AvailablePlugins, and GoMLX's
// backends.New that uses it) crashes on such a file, which is one reason to create backends
// here.
package xla
