package lessonrun

// A class graded with hostile submissions: every student's program runs in the sandbox
// (internal/sandbox), so none can change a classmate's work, the teacher's clone or home, read
// the teacher's files into the report, reach the network, leave processes behind or exhaust the
// machine — and an honest student still passes.
//
// The vandal only ever aims at folders this test made (the class, the copy of the repository,
// the fake home, one file in the temporary folder): were the sandbox to fail open, it must not
// damage anything else on the machine. (An earlier version walked up from its working folder to
// the root; run once without the sandbox, it overwrote every Go file the user could write.)

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/mhalab/mhalab/internal/sandbox"
	"github.com/mhalab/mhalab/internal/testenv"
)

// treeHash hashes every file (path, mode and content) and symlink under dir, skipping the
// folders named in skip (absolute paths).
func treeHash(t *testing.T, dir string, skip ...string) string {
	t.Helper()
	var lines []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		for _, s := range skip {
			if p == s {
				return filepath.SkipDir
			}
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		switch {
		case d.Type()&fs.ModeSymlink != 0:
			target, _ := os.Readlink(p)
			lines = append(lines, rel+" -> "+target)
		case d.IsDir():
			lines = append(lines, fmt.Sprintf("%s/ %v", rel, info.Mode()))
		default:
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			sum := sha256.Sum256(data)
			lines = append(lines, fmt.Sprintf("%s %v %s", rel, info.Mode(), hex.EncodeToString(sum[:])))
		}
		return nil
	})
	if err != nil {
		t.Fatalf("hashing %s: %v", dir, err)
	}
	sort.Strings(lines)
	sum := sha256.Sum256([]byte(strings.Join(lines, "\n")))
	return hex.EncodeToString(sum[:])
}

// linearWith is exercise 1's file with body run first in Linear, which then returns the
// stub's (wrong) answer; imports are added as the body needs them.
func linearWith(body string) string {
	var imports []string
	for _, pkg := range []string{"fmt", "io/fs", "net", "os", "os/exec", "path/filepath", "strings", "time"} {
		if strings.Contains(body, filepath.Base(pkg)+".") {
			imports = append(imports, fmt.Sprintf("\t%q\n", pkg))
		}
	}
	return `package linear

import (
	. "github.com/gomlx/gomlx/pkg/core/graph"
` + strings.Join(imports, "") + `)

func Linear(x, weight, bias *Node) *Node {
` + body + `
	return x
}
`
}

// procsWith returns the command lines of the processes that hold marker.
func procsWith(marker string) []string {
	var out []string
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		if e.Name()[0] < '0' || e.Name()[0] > '9' {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && strings.Contains(string(cmdline), marker) {
			out = append(out, e.Name()+": "+strings.ReplaceAll(string(cmdline), "\x00", " "))
		}
	}
	return out
}

func TestGradeHostileClass(t *testing.T) {
	if !isolation().Confined() {
		// Never run these submissions unconfined.
		testenv.RequireOrSkip(t, fmt.Sprintf("no sandbox on this machine: %s", isolation()))
	}
	root := copyRepo(t)
	// The teacher's home, with a secret; the Go caches stay where they are.
	for _, k := range []string{"GOCACHE", "GOMODCACHE", "GOPATH"} {
		out, err := exec.Command("go", "env", k).Output()
		if err != nil {
			t.Fatal(err)
		}
		t.Setenv(k, strings.TrimSpace(string(out)))
	}
	home := t.TempDir()
	const secret = "teacher-secret-7f3a91"
	secretPath := filepath.Join(home, "grades-2026.txt")
	if err := os.WriteFile(secretPath, []byte(secret+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("HOME", home)
	// The teacher's own go command counts its runs there (Go telemetry): not the students' doing.
	telemetry := filepath.Join(home, ".config", "go", "telemetry")
	if err := os.MkdirAll(telemetry, 0o755); err != nil {
		t.Fatal(err)
	}
	// A TCP listener on the loopback: nothing may reach it.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan string, 16)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted <- c.RemoteAddr().String()
			c.Close()
		}
	}()

	class := t.TempDir()
	student := func(name string) string { return filepath.Join(class, name, ex1.Path(ex1.File)) }
	marker := fmt.Sprintf("%d.%06d", 900+time.Now().Second(), time.Now().Nanosecond()/1000) // sleep's argument
	tmpTarget := filepath.Join(os.TempDir(), "mhalab-vandal-"+marker)
	// Explicit targets, and every Go file under the three folders this test made.
	vandalBody := fmt.Sprintf(`	for _, p := range []string{%q, %q, %q, %q, %q} {
		os.WriteFile(p, []byte("package linear // vandalised\n"), 0o644)
		os.Remove(p)
	}
	for _, dir := range []string{%q, %q, %q} {
		filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() && strings.HasSuffix(p, ".go") {
				os.WriteFile(p, []byte("package linear // vandalised\n"), 0o644)
			}
			return nil
		})
	}`, student("bob"), filepath.Join(root, "lessons", ex1.Dir, ex1.File), filepath.Join(home, "planted.txt"), tmpTarget,
		filepath.Join(home, ".bashrc"), class, root, home)
	subs := map[string]string{
		"alice":  solved(t, ex1),                          // honest and right
		"bob":    string(pristine(t, ex1.Path(ex1.File))), // the stub
		"vandal": linearWith(vandalBody),
		"reader": linearWith(fmt.Sprintf(`	data, err := os.ReadFile(%q)
	panic(fmt.Sprintf("secret: %%q %%v", data, err))`, secretPath)),
		"dialer": linearWith(fmt.Sprintf(`	c, err := net.DialTimeout("tcp", %q, 2*time.Second)
	if err == nil {
		c.Write([]byte("hello"))
	}
	panic(fmt.Sprintf("dial: %%v", err))`, ln.Addr().String())),
		"flooder": linearWith(fmt.Sprintf(`	started := 0
	for i := 0; i < 2000; i++ {
		if exec.Command("/bin/sleep", %q).Start() == nil {
			started++
		}
	}
	panic(fmt.Sprintf("started %%d of 2000 children", started))`, marker)),
		"hog":    linearWith("\tb := make([]byte, 6<<30)\n\tfor i := 0; i < len(b); i += 4096 {\n\t\tb[i] = 1\n\t}"),
		"looper": linearWith("\tfor {\n\t}"),
	}
	for name, src := range subs {
		if err := writeTestFile(student(name), src); err != nil {
			t.Fatal(err)
		}
	}
	vandalDir := filepath.Join(class, "vandal")
	before := map[string]string{
		"class": treeHash(t, class, vandalDir),
		"clone": treeHash(t, root),
		"home":  treeHash(t, home, telemetry),
	}
	csvPath := filepath.Join(t.TempDir(), "grades.csv")
	names := []string{"alice", "bob", "vandal", "reader", "dialer", "flooder", "hog", "looper"}
	args := []string{"grade", "--exercises", "1", "-o", csvPath, "--timeout", "8s"}
	for _, n := range names {
		args = append(args, filepath.Join(class, n))
	}
	start := time.Now()
	code, out, stderr := cli(root, args...)
	t.Logf("grade (%s):\n%s\n%s", time.Since(start).Round(time.Second), out, stderr)
	if code != 0 {
		t.Fatalf("grade: exit %d", code)
	}
	if !strings.Contains(stderr, "sandbox: landlock") {
		t.Errorf("grade does not say which isolation is active:\n%s", stderr)
	}
	for _, want := range []string{
		"| alice | ✓ | 1/1 |",
		"| bob | ✗ | 0/1 |",
		"| vandal | ✗ | 0/1 |",
		"| reader | ✗ | 0/1 |",
		"| dialer | ✗ | 0/1 |",
		"| flooder | ✗ | 0/1 |",
		"| hog | ✗ | 0/1 |",
		"| looper | ✗ | 0/1 |",
		"memory limit",
		"time limit",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q", want)
		}
	}
	if strings.Contains(out, secret) || strings.Contains(stderr, secret) {
		t.Errorf("the teacher's secret reached the report")
	}
	if data, err := os.ReadFile(csvPath); err != nil || strings.Contains(string(data), secret) {
		t.Errorf("grades.csv: %v, or it holds the teacher's secret", err)
	}
	// The flood was stopped by the process limit.
	if i := strings.Index(out, "### flooder"); i < 0 || !(strings.Contains(out[i:], "process limit") || strings.Contains(out[i:], "of 2000 children")) {
		t.Errorf("the flooder's report does not say what stopped it")
	} else if strings.Contains(out[i:], "started 2000 of") {
		t.Errorf("all 2000 children started")
	}
	if left := procsWith(marker); len(left) > 0 {
		t.Errorf("%d processes of the flood are still running after grading, e.g. %s", len(left), left[0])
	}
	select {
	case a := <-accepted:
		t.Errorf("the listener on the loopback accepted a connection from %s", a)
	default:
	}
	after := map[string]string{
		"class": treeHash(t, class, vandalDir),
		"clone": treeHash(t, root),
		"home":  treeHash(t, home, telemetry),
	}
	for k := range before {
		if before[k] != after[k] {
			t.Errorf("grading changed the %s (hash %s → %s)", k, before[k][:12], after[k][:12])
		}
	}
	if _, err := os.Stat(tmpTarget); err == nil {
		os.Remove(tmpTarget)
		t.Errorf("a student's program wrote %s", tmpTarget)
	}
}

// TestGradeRefusesAClassWithoutSandbox: where no sandbox can be set up, grade refuses several
// students (one line saying why) unless --no-sandbox is given; one student is graded.
func TestGradeRefusesAClassWithoutSandbox(t *testing.T) {
	saved := probeIsolation
	probeIsolation = func() sandbox.Isolation { return sandbox.Isolation{Note: "test: no user namespaces, no Landlock"} }
	defer func() { probeIsolation = saved }()
	root := copyRepo(t)
	class := t.TempDir()
	var dirs []string
	for _, name := range []string{"ann", "ben"} {
		dirs = append(dirs, filepath.Join(class, name))
		if err := writeTestFile(filepath.Join(class, name, ex1.Path(ex1.File)), string(pristine(t, ex1.Path(ex1.File)))); err != nil {
			t.Fatal(err)
		}
	}
	csvPath := filepath.Join(t.TempDir(), "grades.csv")
	code, out, stderr := cli(root, append([]string{"grade", "--exercises", "1", "-o", csvPath}, dirs...)...)
	if code != 1 || !strings.Contains(stderr, "no sandbox can be set up") || !strings.Contains(stderr, "--no-sandbox") || strings.Contains(out, "|") {
		t.Errorf("grade of 2 students without a sandbox: exit %d\n%s%s", code, out, stderr)
	}
	if _, err := os.Stat(csvPath); err == nil {
		t.Errorf("the refused grading wrote %s", csvPath)
	}
	code, out, stderr = cli(root, append([]string{"grade", "--exercises", "1", "-o", csvPath, "--no-sandbox"}, dirs...)...)
	if code != 0 || !strings.Contains(stderr, "no sandbox (--no-sandbox)") || !strings.Contains(out, "| ben | ✗ | 0/1 |") {
		t.Errorf("grade --no-sandbox: exit %d\n%s%s", code, out, stderr)
	}
}
