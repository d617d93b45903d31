package xla

import (
	"debug/elf"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/gomlx/go-xla/pkg/pjrt"
)

// Environment variables read by this package.
const (
	// PluginDirEnv names a directory searched for plugins before all others. scripts/setup.sh
	// installs the CPU plugin there when it is set (default ~/.local/lib/go-xla).
	PluginDirEnv = "MHALAB_PLUGIN_DIR"

	// PJRTPathEnv is go-xla's ":"-separated list of plugin directories; when set it replaces
	// go-xla's default directories.
	PJRTPathEnv = pjrt.PJRTPluginPathsEnv
)

// GoXLAPJRTVersion is the PJRT C API version go-xla v0.1.4 is built for (PJRT_API_MAJOR.
// PJRT_API_MINOR in its pjrt_c_api.h). The pinned CPU plugin reports 0.81 and works with it.
const GoXLAPJRTVersion = "0.83"

// PluginFile returns the file name go-xla gives the PJRT plugin of a platform:
// PluginFile("cpu") == "pjrt_c_api_cpu_plugin.so".
func PluginFile(platform string) string {
	return "pjrt_c_api_" + platform + "_plugin.so"
}

// PluginDirs returns the directories searched for PJRT plugins, in order (see the package
// documentation). Unlike go-xla, it does not read /etc/ld.so.conf.
func PluginDirs() []string {
	var dirs []string
	if d := os.Getenv(PluginDirEnv); d != "" {
		dirs = append(dirs, d)
	}
	if list, ok := os.LookupEnv(PJRTPathEnv); ok {
		dirs = append(dirs, splitPathList(list)...)
	} else {
		if home, err := os.UserHomeDir(); err == nil {
			local := filepath.Join(home, ".local", "lib", "go-xla")
			dirs = append(dirs, local, filepath.Join(local, "nvidia"), filepath.Join(home, ".local", "lib", "gomlx", "pjrt"))
		}
		dirs = append(dirs, "/usr/local/lib/go-xla", "/usr/local/lib/go-xla/nvidia", "/usr/local/lib/gomlx/pjrt")
	}
	for _, d := range splitPathList(os.Getenv("LD_LIBRARY_PATH")) {
		if filepath.IsAbs(d) {
			dirs = append(dirs, d)
		}
	}
	// Keep the first occurrence of each directory.
	var unique []string
	for _, d := range dirs {
		if !slices.Contains(unique, d) {
			unique = append(unique, d)
		}
	}
	return unique
}

func splitPathList(list string) []string {
	return slices.DeleteFunc(strings.Split(list, ":"), func(s string) bool { return s == "" })
}

// PluginNotFoundError is the error FindPlugin returns when no directory holds the plugin.
type PluginNotFoundError struct {
	Platform string   // e.g. "cpu"
	Tried    []string // every path looked at, in order
}

func (e *PluginNotFoundError) Error() string {
	return fmt.Sprintf("xla: no %s in any of %s; %s", PluginFile(e.Platform), strings.Join(e.Tried, ", "), installHint(e.Platform))
}

// FindPlugin returns the absolute path of the first file named PluginFile(platform) in
// PluginDirs. Its error, a *PluginNotFoundError, names every path it looked at and how to
// install the plugin.
func FindPlugin(platform string) (string, error) {
	var tried []string
	for _, dir := range PluginDirs() {
		p := filepath.Join(dir, PluginFile(platform))
		tried = append(tried, p)
		if info, err := os.Stat(p); err == nil && !info.IsDir() {
			if abs, err := filepath.Abs(p); err == nil {
				return abs, nil
			}
			return p, nil
		}
	}
	return "", &PluginNotFoundError{Platform: platform, Tried: tried}
}

// installHint tells how to get the plugin of a platform.
func installHint(platform string) string {
	if platform == "cpu" {
		return "run scripts/setup.sh (or make setup) to install it, or use the pure-Go backend with --backend go / GOMLX_BACKEND=go"
	}
	return "scripts/setup.sh installs only the CPU plugin; put a PJRT " + platform +
		" plugin named " + PluginFile(platform) + " in one of those directories"
}

// CheckPlugin checks, without loading it, that path is a PJRT plugin: an ELF shared object
// exporting GetPjrtApi. Loading can still fail later (missing libraries, API mismatch).
func CheckPlugin(path string) error {
	f, err := elf.Open(path)
	if err != nil {
		return fmt.Errorf("xla: %s is not a PJRT plugin: not an ELF file (%v); remove it and run scripts/setup.sh", path, err)
	}
	defer func() { _ = f.Close() }()
	if f.Type != elf.ET_DYN {
		return fmt.Errorf("xla: %s is not a PJRT plugin: ELF type %s, want a shared object (ET_DYN); remove it and run scripts/setup.sh", path, f.Type)
	}
	syms, err := f.DynamicSymbols()
	if err != nil {
		return fmt.Errorf("xla: %s is not a PJRT plugin: cannot read its dynamic symbols (%v); remove it and run scripts/setup.sh", path, err)
	}
	for _, s := range syms {
		if s.Name == pjrt.GetPJRTApiFunctionName && s.Section != elf.SHN_UNDEF {
			return nil
		}
	}
	return fmt.Errorf("xla: %s is not a PJRT plugin: it does not export %s; remove it and run scripts/setup.sh",
		path, pjrt.GetPJRTApiFunctionName)
}

// loadPlugin finds, checks and loads (dlopen) the plugin of a platform.
// go-xla caches loaded plugins by path, so loading twice is cheap.
func loadPlugin(platform string) (*pjrt.Plugin, error) {
	path, err := FindPlugin(platform)
	if err != nil {
		return nil, err
	}
	if err := CheckPlugin(path); err != nil {
		return nil, err
	}
	if platform == "cuda" && !hasNvidiaDevice() {
		return nil, fmt.Errorf("xla: found %s but no NVIDIA GPU (no /dev/nvidia* device)", path)
	}
	if platform == "cuda" {
		if _, err := prepareCUDA(); err != nil { // full float32 dots (cuda_float32.go)
			return nil, err
		}
	}
	var plugin *pjrt.Plugin
	err = catch(func() error {
		var err error
		plugin, err = pjrt.GetPlugin(path)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("xla: failed to load PJRT plugin %s: %w", path, err)
	}
	return plugin, nil
}

func hasNvidiaDevice() bool {
	matches, _ := filepath.Glob("/dev/nvidia[0-9]*")
	return len(matches) > 0
}

// catch runs fn and turns a panic into an error.
func catch(fn func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			if e, ok := r.(error); ok {
				err = fmt.Errorf("panic: %w", e)
			} else {
				err = fmt.Errorf("panic: %v", r)
			}
		}
	}()
	return fn()
}

// BackendInfo describes one backend spec on this machine.
type BackendInfo struct {
	Name        string // spec: "go", "xla:cpu" or "xla:cuda"
	Available   bool   // New(Name) is expected to succeed
	PluginPath  string // absolute path of the PJRT plugin found ("" for "go" or when none is found)
	PJRTVersion string // PJRT C API version the plugin reports, e.g. "0.81" ("" when not loaded)
	Platform    string // platform the PJRT client reports, e.g. "cpu"
	Devices     int    // addressable devices of a client of that plugin (1 for "go")
	Reason      string // why it is unavailable; a note otherwise
}

// String formats info on one line.
func (info BackendInfo) String() string {
	if !info.Available {
		return fmt.Sprintf("%s: unavailable: %s", info.Name, info.Reason)
	}
	if info.PluginPath == "" {
		return fmt.Sprintf("%s: available (%s)", info.Name, info.Reason)
	}
	return fmt.Sprintf("%s: available, PJRT API %s, %d device(s), plugin %s", info.Name, info.PJRTVersion, info.Devices, info.PluginPath)
}

// Available returns one BackendInfo per spec in Specs, in that order. For an XLA spec it
// finds, checks and loads the plugin and creates (then destroys) a PJRT client to count the
// devices; it never panics, whatever file it finds.
func Available() []BackendInfo {
	infos := make([]BackendInfo, 0, len(Specs()))
	for _, spec := range Specs() {
		infos = append(infos, describe(spec))
	}
	return infos
}

// describe returns the BackendInfo of a valid spec.
func describe(spec string) BackendInfo {
	info := BackendInfo{Name: spec}
	if spec == SpecGo {
		info.Available, info.Devices, info.Reason = true, 1, "pure Go, built in"
		return info
	}
	platform := strings.TrimPrefix(spec, "xla:")
	if path, err := FindPlugin(platform); err == nil {
		info.PluginPath = path
	}
	plugin, err := loadPlugin(platform)
	if err != nil {
		info.Reason = err.Error()
		return info
	}
	major, minor := plugin.Version()
	info.PJRTVersion = fmt.Sprintf("%d.%d", major, minor)
	clientCreated.Store(true) // XLA reads $XLA_FLAGS now (see EnableHLODump)
	err = catch(func() error {
		client, err := plugin.NewClient(nil)
		if err != nil {
			return err
		}
		info.Platform = client.Platform()
		info.Devices = len(client.AddressableDevices())
		return client.Destroy()
	})
	if err != nil {
		info.Reason = fmt.Sprintf("xla: plugin %s loads (PJRT API %s) but creating a client failed: %v", info.PluginPath, info.PJRTVersion, err)
		return info
	}
	info.Available = true
	var notes []string
	if info.PJRTVersion != GoXLAPJRTVersion {
		notes = append(notes, fmt.Sprintf("plugin PJRT API %s, go-xla built for %s", info.PJRTVersion, GoXLAPJRTVersion))
	}
	if platform == "cuda" {
		tf32, _ := prepareCUDA() // run by loadPlugin: its note
		notes = append(notes, strings.TrimPrefix(tf32, ", "))
	}
	info.Reason = strings.Join(notes, "; ")
	return info
}
