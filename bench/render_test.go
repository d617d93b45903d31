package bench

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestCommandLine(t *testing.T) {
	for _, c := range []struct {
		cfg  Config
		want string
	}{
		{Config{}, "mhalab bench"},
		{Config{Quick: true, Backends: []string{"go", "xla:cpu"}}, "mhalab bench --quick --backends go,xla:cpu"},
		{Config{Suites: []string{"mha", "torch"}, Groups: []string{"seed003"}, Budget: 3 * time.Second, Threads: 1}, "mhalab bench --suites mha,torch --groups seed003 --budget 3s --threads 1"},
	} {
		if got := c.cfg.commandLine(); got != c.want {
			t.Errorf("commandLine(%+v) = %q, want %q", c.cfg, got, c.want)
		}
	}
}

func TestRenderReport(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "r.json")
	rep := &benchReport{Started: "2026-12-01T18:15:19Z", Command: "mhalab bench --quick", Machine: machineInfo{CPUs: 2, LoadBefore: "1.00 1.00 1.00"}}
	if err := writeJSON(path, rep); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := RenderReport(&out, path); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"2026-12-01T18:15:19Z", "Command: `mhalab bench --quick`", "load average (1, 5, 15 min) before 1.00 1.00 1.00"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("rendered report lacks %q:\n%s", want, out.String())
		}
	}
	if err := os.WriteFile(path, []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := RenderReport(&out, path); err == nil || !strings.HasPrefix(err.Error(), path+": not a JSON report") {
		t.Errorf("RenderReport({}) = %v", err)
	}
}

// TestFormatTimes: a cache slower than recomputing shows below 1× (xla:cuda's quick decode row,
// 2571 vs 3875 tokens/s, printed "1×" before), and large speed-ups stay whole numbers.
func TestFormatTimes(t *testing.T) {
	for _, c := range []struct {
		x    float64
		want string
	}{{2571.0 / 3875.02, "0.66×"}, {4.465, "4.5×"}, {1, "1×"}, {9.96, "10×"}, {12.3, "12×"}, {150.4, "150×"}} {
		if got := FormatTimes(c.x); got != c.want {
			t.Errorf("FormatTimes(%v) = %q, want %q", c.x, got, c.want)
		}
	}
	var buf bytes.Buffer
	printReport(&buf, &benchReport{Decode: []decodeResult{{Backend: "xla:cuda", CachedTokensPerS: 2571, RecomputeTokPerS: 3875.02, Speedup: 2571 / 3875.02}}})
	if !strings.Contains(buf.String(), "| 0.66× |") {
		t.Errorf("decode row does not show the slow-down as 0.66×:\n%s", buf.String())
	}
}

// TestPortablePaths: a report's JSON names paths under the repository from "." and under the
// home folder from "~", so that docs/performance.md renders the same in any checkout, as any user.
func TestPortablePaths(t *testing.T) {
	in := `{"backend": "xla:cuda [PJRT API 0.115, /work/main/build/gpu/plugin/p.so]", "python": "/home/ann/.cache/mhalab/torch-venv/bin/python", "other": "/work/mainly/x /home/annette/y"}`
	want := `{"backend": "xla:cuda [PJRT API 0.115, ./build/gpu/plugin/p.so]", "python": "~/.cache/mhalab/torch-venv/bin/python", "other": "/work/mainly/x /home/annette/y"}`
	if got := string(portablePaths([]byte(in), "/work/main", "/home/ann/")); got != want {
		t.Errorf("portablePaths:\n got %s\nwant %s", got, want)
	}
	if got := string(portablePaths([]byte(in), "", "/")); got != in {
		t.Errorf("portablePaths with no repository and home / changed the report:\n%s", got)
	}
	dir := t.TempDir()
	t.Setenv("HOME", dir)
	path := filepath.Join(dir, "r.json")
	rep := &benchReport{Started: "2026-12-04T14:20:50Z", Command: "mhalab bench", Torch: []torchInfo{{Python: filepath.Join(dir, "venv", "bin", "python")}}}
	if err := writeJSON(path, rep); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), `"~/venv/bin/python"`) || strings.Contains(string(data), dir) {
		t.Errorf("writeJSON kept the home folder %s:\n%s", dir, data)
	}
}
