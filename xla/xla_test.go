package xla_test

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"runtime"
	"strings"
	"testing"

	"github.com/gomlx/go-xla/pkg/pjrt"
	"github.com/gomlx/gomlx/backends"
	. "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/mhalab/mhalab/internal/backendtest"
	"github.com/mhalab/mhalab/internal/testenv"
	"github.com/mhalab/mhalab/xla"
)

// xlaFlagsAfterInit is $XLA_FLAGS when TestMain starts, after every package's init ran.
var xlaFlagsAfterInit string

// hloDumpErr is what xla.EnableHLODump returned in TestMain.
var hloDumpErr error

func TestMain(m *testing.M) {
	xlaFlagsAfterInit = os.Getenv("XLA_FLAGS")
	switch os.Getenv(childEnv) {
	case "":
	case "hlo-late":
		os.Exit(runHLOLateChild())
	case mallocChild:
		os.Exit(runMallocChild())
	case hugePagesChild:
		os.Exit(runHugePagesChild())
	default:
		os.Exit(runChild())
	}
	// Before any XLA backend exists (backendtest.Main creates them): XLA reads $XLA_FLAGS once.
	hloDumpErr = xla.EnableHLODump()
	backendtest.Main(m, "xla")
}

// sumOfSquares runs a tiny graph on b: 1²+2²+3² = 14.
func sumOfSquares(t *testing.T, b backends.Backend) {
	t.Helper()
	got := MustExecOnce(b, func(x *Node) *Node { return ReduceAllSum(Mul(x, x)) }, []float32{1, 2, 3})
	if v := got.Value().(float32); v != 14 {
		t.Fatalf("sum of squares on %s = %v, want 14", b.Name(), v)
	}
}

func TestBackendsRunAGraph(t *testing.T) {
	backendtest.Run(t, sumOfSquares)
}

// isXLA tells an XLA backend (Name "xla") from the pure-Go one (Name "SimpleGo (go)").
func isXLA(b backends.Backend) bool { return b.Name() == "xla" }

// noPlugins points every plugin search of this process at an empty directory.
func noPlugins(t *testing.T) string {
	dir := t.TempDir()
	t.Setenv(xla.PluginDirEnv, "")
	t.Setenv(xla.PJRTPathEnv, dir)
	t.Setenv("LD_LIBRARY_PATH", "")
	return dir
}

func TestUnknownSpecIsAnErrorListingValidSpecs(t *testing.T) {
	for _, spec := range []string{"tpu", "xla", "xla:tpu", "simplego", "GO", "xla:cpu,shared_buffers"} {
		b, err := xla.New(spec)
		if err == nil {
			t.Fatalf("New(%q) = %v, want an error", spec, b)
		}
		for _, valid := range xla.Specs() {
			if !strings.Contains(err.Error(), valid) {
				t.Errorf("New(%q) error %q does not list valid spec %q", spec, err, valid)
			}
		}
	}
}

func TestGOMLXBackendChoosesTheDefault(t *testing.T) {
	t.Setenv(xla.BackendEnv, "go")
	b, reason, err := xla.NewWithReason("")
	if err != nil {
		t.Fatal(err)
	}
	if isXLA(b) || !strings.HasPrefix(reason, "go (from GOMLX_BACKEND=go)") {
		t.Fatalf("with GOMLX_BACKEND=go: backend %q, reason %q", b.Name(), reason)
	}
	sumOfSquares(t, b)

	t.Setenv(xla.BackendEnv, "bogus")
	if _, _, err := xla.NewWithReason(""); err == nil || !strings.Contains(err.Error(), "bogus") || !strings.Contains(err.Error(), "GOMLX_BACKEND") {
		t.Fatalf("GOMLX_BACKEND=bogus: got error %v, want one naming GOMLX_BACKEND and bogus", err)
	}

	// An explicit spec wins over GOMLX_BACKEND.
	if b, _, err := xla.NewWithReason("go"); err != nil || isXLA(b) {
		t.Fatalf(`NewWithReason("go") with GOMLX_BACKEND=bogus: %v, %v`, b, err)
	}
}

func TestDefaultIsXLACPUWhenItsPluginLoads(t *testing.T) {
	t.Setenv(xla.BackendEnv, "")
	b, reason, err := xla.NewWithReason("")
	if err != nil {
		t.Fatal(err)
	}
	cpuAvailable := xla.Available()[1].Available
	if cpuAvailable != isXLA(b) {
		t.Fatalf("xla:cpu available = %v but default backend is %q (%s)", cpuAvailable, b.Name(), reason)
	}
	want := "go (default"
	if cpuAvailable {
		want = "xla:cpu (default"
	}
	if !strings.HasPrefix(reason, want) {
		t.Fatalf("reason %q, want it to start with %q", reason, want)
	}
	if testenv.InCI() && !cpuAvailable {
		t.Fatalf("CI requires xla:cpu; default chose: %s", reason)
	}
	sumOfSquares(t, b)
}

func TestDefaultFallsBackToGoWithoutPlugin(t *testing.T) {
	noPlugins(t)
	t.Setenv(xla.BackendEnv, "")
	b, reason, err := xla.NewWithReason("")
	if err != nil {
		t.Fatal(err)
	}
	if isXLA(b) || !strings.HasPrefix(reason, "go (default: XLA CPU unavailable") || !strings.Contains(reason, "scripts/setup.sh") {
		t.Fatalf("without plugins: backend %q, reason %q", b.Name(), reason)
	}
}

func TestMissingPluginErrorNamesPathsAndSetup(t *testing.T) {
	dir := noPlugins(t)
	_, err := xla.New("xla:cpu")
	if err == nil {
		t.Fatal(`New("xla:cpu") without plugin: no error`)
	}
	wantPath := filepath.Join(dir, "pjrt_c_api_cpu_plugin.so")
	for _, want := range []string{wantPath, "scripts/setup.sh"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not contain %q", err, want)
		}
	}
	infos := xla.Available()
	if infos[1].Name != "xla:cpu" || infos[1].Available || !strings.Contains(infos[1].Reason, wantPath) {
		t.Errorf("Available()[1] = %+v, want xla:cpu unavailable naming %s", infos[1], wantPath)
	}
}

func TestAvailableListsEverySpec(t *testing.T) {
	infos := xla.Available()
	if len(infos) != len(xla.Specs()) {
		t.Fatalf("Available() has %d entries, want %d", len(infos), len(xla.Specs()))
	}
	for i, info := range infos {
		if info.Name != xla.Specs()[i] {
			t.Errorf("Available()[%d].Name = %q, want %q", i, info.Name, xla.Specs()[i])
		}
		if !info.Available && info.Reason == "" {
			t.Errorf("%s unavailable without a reason", info.Name)
		}
		if info.Available && info.Devices < 1 {
			t.Errorf("%s available with %d devices", info.Name, info.Devices)
		}
		if info.Available && info.Name != "go" {
			if !regexp.MustCompile(`^\d+\.\d+$`).MatchString(info.PJRTVersion) || !filepath.IsAbs(info.PluginPath) {
				t.Errorf("%s: PJRTVersion %q, PluginPath %q", info.Name, info.PJRTVersion, info.PluginPath)
			}
		}
		t.Log(info)
	}
	if !infos[0].Available {
		t.Error("go backend unavailable")
	}
	if testenv.InCI() && !infos[1].Available {
		t.Errorf("CI requires xla:cpu: %s", infos[1].Reason)
	}
}

// writeFakePlugin writes a file named like the CPU plugin into dir.
func writeFakePlugin(t *testing.T, dir string, content []byte) string {
	t.Helper()
	path := filepath.Join(dir, xla.PluginFile("cpu"))
	if err := os.WriteFile(path, content, 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

// loadedSharedLibrary returns the path of a shared library this process has mapped (libc,
// since go-xla uses cgo): an ELF shared object without GetPjrtApi.
func loadedSharedLibrary(t *testing.T) string {
	t.Helper()
	f, err := os.Open("/proc/self/maps")
	if err != nil {
		t.Skipf("no /proc/self/maps: %v", err)
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		fields := strings.Fields(s.Text())
		if p := fields[len(fields)-1]; strings.HasPrefix(p, "/") && strings.Contains(filepath.Base(p), "libc.so") {
			return p
		}
	}
	t.Skip("no libc.so mapped")
	return ""
}

func TestNotAPJRTPluginIsAnError(t *testing.T) {
	libc := loadedSharedLibrary(t)
	libcBytes, err := os.ReadFile(libc)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, want string
		content    []byte
	}{
		{"text", "not an ELF file", []byte("this is not a plugin\n")},
		{"empty", "not an ELF file", nil},
		{"elf-without-GetPjrtApi", "does not export GetPjrtApi", libcBytes},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			path := writeFakePlugin(t, dir, c.content)
			t.Setenv(xla.PluginDirEnv, dir)
			if err := xla.CheckPlugin(path); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("CheckPlugin(%s): %v, want an error containing %q", c.name, err, c.want)
			}
			if _, err := xla.New("xla:cpu"); err == nil || !strings.Contains(err.Error(), path) {
				t.Fatalf(`New("xla:cpu") with a %s plugin: %v, want an error naming %s`, c.name, err, path)
			}
			info := xla.Available()[1]
			if info.Available || !strings.Contains(info.Reason, "not a PJRT plugin") || info.PluginPath != path {
				t.Fatalf("Available() with a %s plugin: %+v", c.name, info)
			}
		})
	}
}

func TestRealPluginPassesCheck(t *testing.T) {
	path, err := xla.FindPlugin("cpu")
	if err != nil {
		testenv.RequireOrSkip(t, err.Error())
	}
	if err := xla.CheckPlugin(path); err != nil {
		t.Fatal(err)
	}
}

// childEnv makes the test binary run runChild instead of the tests.
const childEnv = "MHALAB_XLA_TEST_CHILD"

// runChild prints what Available and the default choice say, one line each.
func runChild() int {
	for _, info := range xla.Available() {
		fmt.Println("available:", info)
	}
	_, reason, err := xla.NewWithReason("")
	if err != nil {
		fmt.Println("default error:", err)
		return 1
	}
	fmt.Println("default:", reason)
	return 0
}

// TestFakePluginInGoXLASearchPath sets PJRT_PLUGIN_LIBRARY_PATH, which go-xla reads once at
// start-up, so it runs a fresh copy of this test binary. go-xla's own search
// (pjrt.AvailablePlugins) crashes on such a file; this package must not.
func TestFakePluginInGoXLASearchPath(t *testing.T) {
	dir := t.TempDir()
	path := writeFakePlugin(t, dir, []byte("garbage"))
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), childEnv+"=1", xla.PJRTPathEnv+"="+dir, xla.PluginDirEnv+"=", "LD_LIBRARY_PATH=", xla.BackendEnv+"=")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child failed: %v\n%s", err, out)
	}
	text := string(out)
	for _, want := range []string{
		"available: go: available",
		"available: xla:cpu: unavailable: xla: " + path + " is not a PJRT plugin",
		"default: go (default: XLA CPU unavailable: xla: " + path + " is not a PJRT plugin",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("child output lacks %q:\n%s", want, text)
		}
	}
}

// TestGoXLAPJRTVersion checks GoXLAPJRTVersion against the pjrt_c_api.h go-xla is built with.
func TestGoXLAPJRTVersion(t *testing.T) {
	file, _ := runtime.FuncForPC(reflect.ValueOf(pjrt.GetPlugin).Pointer()).FileLine(reflect.ValueOf(pjrt.GetPlugin).Pointer())
	header, err := os.ReadFile(filepath.Join(filepath.Dir(file), "pjrt_c_api.h"))
	if err != nil {
		t.Skipf("go-xla sources not found (built with -trimpath?): %v", err)
	}
	major := regexp.MustCompile(`(?m)^#define PJRT_API_MAJOR (\d+)`).FindSubmatch(header)
	minor := regexp.MustCompile(`(?m)^#define PJRT_API_MINOR (\d+)`).FindSubmatch(header)
	if major == nil || minor == nil {
		t.Fatal("PJRT_API_MAJOR/MINOR not found in pjrt_c_api.h")
	}
	if got := string(major[1]) + "." + string(minor[1]); got != xla.GoXLAPJRTVersion {
		t.Fatalf("go-xla is built for PJRT API %s, xla.GoXLAPJRTVersion = %s", got, xla.GoXLAPJRTVersion)
	}
}
