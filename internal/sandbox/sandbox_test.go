package sandbox

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The test binary is also the attack program: with $SBX_ATTACK set it runs that attack
// (inside a sandbox) instead of the tests.
func TestMain(m *testing.M) {
	Main()
	if a := os.Getenv("SBX_ATTACK"); a != "" {
		os.Exit(attack(a, os.Args[1:]))
	}
	// MHALAB_SANDBOX_TEST_OFF=landlock,netns,… switches mechanisms off, to see the tests fail.
	for _, k := range strings.Split(os.Getenv("MHALAB_SANDBOX_TEST_OFF"), ",") {
		switch k {
		case "landlock":
			testOff.landlock = true
		case "userns":
			testOff.userNS = true
		case "pidns":
			testOff.pidNS = true
		case "netns":
			testOff.netNS = true
		case "uid":
			testOff.uid = true
		case "limits":
			testOff.limits = true
		}
	}
	os.Exit(m.Run())
}

// attack runs one attack, printing what happened; exit status 0 unless it crashed.
func attack(name string, args []string) int {
	switch name {
	case "honest":
		fmt.Println("hello from the sandbox")
		b, err := os.ReadFile(args[0])
		if err != nil {
			fmt.Fprintln(os.Stderr, "read:", err)
			return 1
		}
		fmt.Printf("fixture: %s\n", b)
		if err := os.WriteFile("out.txt", []byte("result"), 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "write:", err)
			return 1
		}
		if err := os.WriteFile(filepath.Join(os.Getenv("TMPDIR"), "tmp.txt"), []byte("t"), 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "write tmp:", err)
			return 1
		}
		return 0
	case "write":
		for _, p := range args {
			if err := os.WriteFile(p, []byte("pwned"), 0o666); err != nil {
				fmt.Printf("DENIED %s: %v\n", p, err)
			} else {
				fmt.Printf("WROTE %s\n", p)
			}
		}
		return 0
	case "read":
		for _, p := range args {
			if b, err := os.ReadFile(p); err != nil {
				fmt.Printf("DENIED %s: %v\n", p, err)
			} else {
				fmt.Printf("READ %s: %q\n", p, b)
			}
		}
		return 0
	case "net":
		if c, err := net.DialTimeout("tcp", args[0], 2*time.Second); err != nil {
			fmt.Printf("TCP DENIED: %v\n", err)
		} else {
			c.Write([]byte("hi"))
			c.Close()
			fmt.Println("TCP CONNECTED")
		}
		if c, err := net.Dial("udp", args[1]); err != nil {
			fmt.Printf("UDP DENIED: %v\n", err)
		} else if _, err := c.Write([]byte("hi")); err != nil {
			fmt.Printf("UDP DENIED: %v\n", err)
		} else {
			fmt.Println("UDP SENT")
		}
		return 0
	case "flood":
		for i := range 2000 {
			c := exec.Command("/bin/sleep", args[0])
			// Its own session: a process-group kill alone would miss it.
			c.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
			if err := c.Start(); err != nil {
				fmt.Fprintf(os.Stderr, "child %d: %v\n", i, err)
				return 3
			}
			c.Process.Release() // frees its pidfd: the flood meets the task limit, not the files limit
		}
		fmt.Println("FLOOD STARTED 2000")
		time.Sleep(time.Minute)
		return 0
	case "alloc":
		b := make([]byte, 6<<30)
		for i := 0; i < len(b); i += 4096 {
			b[i] = 1
		}
		fmt.Println("ALLOCATED", len(b))
		return 0
	case "spin":
		for {
		}
	case "signal":
		pid, _ := strconv.Atoi(args[0])
		if err := syscall.Kill(pid, syscall.SIGUSR1); err != nil {
			fmt.Printf("SIGNAL DENIED: %v\n", err)
		} else {
			fmt.Println("SIGNAL SENT")
		}
		return 0
	}
	fmt.Fprintln(os.Stderr, "unknown attack", name)
	return 2
}

// base makes a folder others can search (the child's uid must reach Dir), removed at the end.
func base(t *testing.T) string {
	t.Helper()
	d, err := os.MkdirTemp("", "sbx-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(d) })
	if err := os.Chmod(d, 0o755); err != nil {
		t.Fatal(err)
	}
	return d
}

func mkdir(t *testing.T, parts ...string) string {
	t.Helper()
	d := filepath.Join(parts...)
	if err := os.MkdirAll(d, 0o755); err != nil {
		t.Fatal(err)
	}
	return d
}

// run runs the test binary in attack mode inside a sandbox with Dir beneath b.
func run(t *testing.T, p Policy, timeout time.Duration, name string, args ...string) (Outcome, string, string) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	p.Stdout, p.Stderr = &stdout, &stderr
	p.Env = append(p.Env, "SBX_ATTACK="+name)
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	c, err := Command(ctx, p, exe, args...)
	if err != nil {
		t.Fatal(err)
	}
	o := c.Run()
	t.Logf("%s: %+v\nstdout: %s\nstderr: %.2000s", name, o, stdout.String(), stderr.String())
	return o, stdout.String(), stderr.String()
}

func TestProbe(t *testing.T) {
	iso := Probe()
	t.Logf("isolation: %s (confined %v; note %q)", iso, iso.Confined(), iso.Note)
	if iso.Landlock == 0 && !iso.PIDNS {
		t.Logf("nothing to enforce here")
	}
}

func TestHonest(t *testing.T) {
	b := base(t)
	dir := mkdir(t, b, "work")
	fix := mkdir(t, b, "fixtures")
	if err := os.WriteFile(filepath.Join(fix, "data.txt"), []byte("42"), 0o644); err != nil {
		t.Fatal(err)
	}
	o, out, _ := run(t, Policy{Dir: dir, ReadOnly: []string{fix}}, 20*time.Second, "honest", filepath.Join(fix, "data.txt"))
	if o.Exit != 0 || o.Err != nil || o.Limit != "" {
		t.Fatalf("honest program: %+v", o)
	}
	if !strings.Contains(out, "hello from the sandbox") || !strings.Contains(out, "fixture: 42") {
		t.Errorf("stdout %q", out)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "out.txt")); err != nil || string(b) != "result" {
		t.Errorf("out.txt: %q, %v", b, err)
	}
}

// hashTree is a digest of every path, mode and content beneath dir.
func hashTree(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, _ := d.Info()
		fmt.Fprintf(&b, "%s %v %d\n", p, fi.Mode(), fi.Size())
		if fi.Mode().IsRegular() {
			c, _ := os.ReadFile(p)
			b.Write(c)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func TestWritesOutsideDir(t *testing.T) {
	b := base(t)
	dir := mkdir(t, b, "work")
	// A classmate's work and the caller's home, left writable by everyone (sloppy classroom
	// permissions): only the sandbox stands between them and the child.
	mate := mkdir(t, b, "classmate")
	home := mkdir(t, b, "home")
	for _, d := range []string{mate, home} {
		os.Chmod(d, 0o777)
		f := filepath.Join(d, "work.go")
		os.WriteFile(f, []byte("package main // mine"), 0o666)
		os.Chmod(f, 0o666)
	}
	t.Setenv("HOME", home)
	before := hashTree(t, mate) + hashTree(t, home)
	tag := strconv.Itoa(os.Getpid())
	targets := []string{
		filepath.Join(mate, "work.go"), filepath.Join(mate, "new.go"),
		filepath.Join(os.Getenv("HOME"), ".bashrc"), filepath.Join(home, "work.go"),
		"/root/sbx-attack-" + tag, "/tmp/sbx-attack-" + tag, "/dev/shm/sbx-attack-" + tag,
	}
	t.Cleanup(func() {
		for _, p := range targets[4:] {
			os.Remove(p)
		}
	})
	o, out, _ := run(t, Policy{Dir: dir}, 20*time.Second, "write", targets...)
	if o.Exit != 0 || o.Err != nil {
		t.Fatalf("outcome %+v", o)
	}
	if strings.Contains(out, "WROTE") {
		t.Errorf("the child wrote outside Dir:\n%s", out)
	}
	if after := hashTree(t, mate) + hashTree(t, home); after != before {
		t.Errorf("classmate folder or home changed")
	}
	for _, p := range targets[4:] {
		if _, err := os.Lstat(p); err == nil {
			t.Errorf("%s exists", p)
		}
	}
}

func TestReadSecret(t *testing.T) {
	b := base(t)
	dir := mkdir(t, b, "work")
	teacher := mkdir(t, b, "teacher")
	secret := filepath.Join(teacher, "answers.txt")
	os.WriteFile(secret, []byte("the answers"), 0o644)
	os.Chmod(secret, 0o644)
	// /proc/1 is the machine's init: the child shares the machine's /proc mount, and may read
	// only its own /proc/self (plus cpuinfo, meminfo, stat).
	_, out, _ := run(t, Policy{Dir: dir}, 20*time.Second, "read", secret, "/proc/1/cmdline", "/proc/self/status")
	if !strings.Contains(out, "DENIED "+secret) || strings.Contains(out, "the answers") {
		t.Errorf("the child read the teacher's file:\n%s", out)
	}
	if !strings.Contains(out, "DENIED /proc/1/cmdline") {
		t.Errorf("the child read another process's /proc:\n%s", out)
	}
	if !strings.Contains(out, "READ /proc/self/status") {
		t.Errorf("the child could not read its own /proc/self:\n%s", out)
	}
}

func TestNetwork(t *testing.T) {
	b := base(t)
	dir := mkdir(t, b, "work")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan bool, 1)
	go func() {
		c, err := ln.Accept()
		if err == nil {
			c.Close()
		}
		accepted <- err == nil
	}()
	udp, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer udp.Close()
	_, out, _ := run(t, Policy{Dir: dir}, 20*time.Second, "net", ln.Addr().String(), udp.LocalAddr().String())
	ln.Close()
	if <-accepted {
		t.Errorf("the listener accepted a connection from the child")
	}
	udp.SetReadDeadline(time.Now().Add(500 * time.Millisecond))
	if n, _, err := udp.ReadFrom(make([]byte, 16)); err == nil {
		t.Errorf("a UDP datagram of %d bytes came from the child", n)
	}
	if !strings.Contains(out, "TCP DENIED") {
		t.Errorf("child says:\n%s", out)
	}
}

func TestProcessFlood(t *testing.T) {
	b := base(t)
	dir := mkdir(t, b, "work")
	marker := fmt.Sprintf("60.%06d", os.Getpid()%1000000) // sleep's argument, unique to this test
	o, _, _ := run(t, Policy{Dir: dir}, 30*time.Second, "flood", marker)
	if o.Limit != "process limit 256" {
		t.Errorf("Limit %q, want process limit 256", o.Limit)
	}
	// Nothing of the flood may be left.
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	left := 0
	for _, p := range procs {
		if c, err := os.ReadFile(p); err == nil && bytes.Contains(c, []byte(marker)) {
			left++
		}
	}
	if left > 0 {
		t.Errorf("%d processes of the flood are still alive", left)
		exec.Command("pkill", "-f", "^/bin/sleep "+marker).Run() // only our marker
	}
}

func TestMemory(t *testing.T) {
	b := base(t)
	dir := mkdir(t, b, "work")
	o, out, _ := run(t, Policy{Dir: dir}, 30*time.Second, "alloc")
	want := "memory limit " + bytesWords(DefaultMemory)
	if o.Limit != want || strings.Contains(out, "ALLOCATED") {
		t.Errorf("Limit %q (want %s), stdout %q", o.Limit, want, out)
	}
}

func TestTimeLimits(t *testing.T) {
	b := base(t)
	dir := mkdir(t, b, "work")
	o, _, _ := run(t, Policy{Dir: dir}, 1*time.Second, "spin")
	if o.Limit != "time limit 1 s" {
		t.Errorf("deadline: Limit %q, want time limit 1 s", o.Limit)
	}
	// The wall-clock limit is far above the CPU limit: on a loaded machine (load 20 on 2 cores, a
	// niced CI run) one CPU second took more than 20 s of wall time, and the deadline fired first.
	// On an idle machine the spin ends after about 1 s either way.
	o, _, _ = run(t, Policy{Dir: dir, CPU: time.Second}, 180*time.Second, "spin")
	if o.Limit != "CPU time limit 1 s" {
		t.Errorf("CPU: Limit %q, want CPU time limit 1 s", o.Limit)
	}
}

func TestSignalParent(t *testing.T) {
	b := base(t)
	dir := mkdir(t, b, "work")
	got := make(chan os.Signal, 1)
	signalNotify(got)
	defer signalStop(got)
	_, out, _ := run(t, Policy{Dir: dir}, 20*time.Second, "signal", strconv.Itoa(os.Getpid()))
	select {
	case s := <-got:
		t.Errorf("the child signalled the parent: %v", s)
	case <-time.After(300 * time.Millisecond):
	}
	if !strings.Contains(out, "SIGNAL DENIED") {
		t.Errorf("child says:\n%s", out)
	}
}

func TestOutputCapped(t *testing.T) {
	var w bytes.Buffer
	c := &capture{w: &w}
	for range 100 {
		c.take(make([]byte, 10<<10))
	}
	if w.Len() != OutputCap || c.dropped != 100*10<<10-OutputCap {
		t.Errorf("passed %d, dropped %d", w.Len(), c.dropped)
	}
}

func TestBadInput(t *testing.T) {
	ctx := context.Background()
	exe, _ := os.Executable()
	for _, p := range []Policy{{}, {Dir: "/nonexistent-sbx"}, {Dir: t.TempDir(), WorkDir: "/etc"}, {Dir: t.TempDir(), Memory: -1}} {
		if _, err := Command(ctx, p, exe); err == nil {
			t.Errorf("%+v: no error", p)
		} else {
			t.Log(err)
		}
	}
	if _, err := Command(ctx, Policy{Dir: t.TempDir()}, "/nonexistent-prog"); err == nil {
		t.Error("missing program: no error")
	}
}

// TestNonRoot re-runs the attacks as an ordinary user (uid 1000, cloudsdk here) when the
// tests run as root: the path a teacher's laptop takes (user namespace, caller's uid, Landlock).
func TestNonRoot(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("already not root")
	}
	const uid = 1000
	if _, err := os.Stat("/home"); err != nil || !userExists(uid) {
		t.Skip("no uid 1000 on this machine")
	}
	b := base(t)
	exe, _ := os.Executable()
	bin := filepath.Join(b, "sandbox.test")
	data, err := os.ReadFile(exe)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, data, 0o755); err != nil {
		t.Fatal(err)
	}
	home := mkdir(t, b, "home")
	os.Chown(home, uid, uid)
	cmd := exec.Command(bin, "-test.run", "TestProbe|TestHonest|TestWritesOutsideDir|TestReadSecret|TestNetwork|TestProcessFlood|TestMemory|TestTimeLimits|TestSignalParent", "-test.v", "-test.count=1")
	cmd.Dir = home
	cmd.Env = []string{"HOME=" + home, "TMPDIR=" + home, "PATH=/usr/bin:/bin", "MHALAB_SANDBOX_TEST_OFF=" + os.Getenv("MHALAB_SANDBOX_TEST_OFF")}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uid, Gid: uid, Groups: []uint32{}}}
	out, err := cmd.CombinedOutput()
	t.Logf("as uid %d:\n%s", uid, out)
	if err != nil {
		t.Fatalf("the attacks failed as uid %d: %v", uid, err)
	}
	if !strings.Contains(string(out), "user+pid+net+ipc namespaces; uid 1000") {
		t.Errorf("uid %d did not get its namespaces", uid)
	}
}

func userExists(uid int) bool {
	b, err := os.ReadFile("/etc/passwd")
	return err == nil && strings.Contains(string(b), fmt.Sprintf(":x:%d:", uid))
}

// TestGraph runs a tiny GoMLX graph in the sandbox with the default limits: the pure-Go
// backend, and XLA's CPU plugin when it is installed (as a ReadOnly path).
func TestGraph(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a GoMLX program")
	}
	b := base(t)
	bindir := mkdir(t, b, "bin")
	prog := filepath.Join(bindir, "graphprog")
	build := exec.Command("go", "build", "-o", prog, "./testdata/graphprog")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	home, _ := os.UserHomeDir()
	plugin := filepath.Join(home, ".local/lib/go-xla/pjrt_c_api_cpu_plugin.so")
	specs := []string{"go"}
	if _, err := os.Stat(plugin); err == nil {
		specs = append(specs, "xla:cpu")
	} else {
		t.Logf("no %s: XLA not checked", plugin)
	}
	for _, spec := range specs {
		dir := mkdir(t, b, "work-"+strings.ReplaceAll(spec, ":", "-"))
		p := Policy{Dir: dir, ReadOnly: []string{bindir}, Env: append([]string{"GOMLX_NO_AUTO_INSTALL=1"}, strings.Fields(os.Getenv("SBX_GRAPH_ENV"))...)}
		if m, err := strconv.ParseInt(os.Getenv("SBX_GRAPH_MEMORY"), 10, 64); err == nil {
			p.Memory = m // measuring what XLA needs
		}
		if spec == "xla:cpu" {
			p.ReadOnly = append(p.ReadOnly, filepath.Dir(plugin))
			p.Env = append(p.Env, "PJRT_PLUGIN_LIBRARY_PATH="+filepath.Dir(plugin))
		}
		var out, errb bytes.Buffer
		p.Stdout, p.Stderr = &out, &errb
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		c, err := Command(ctx, p, prog, spec)
		if err != nil {
			t.Fatal(err)
		}
		o := c.Run()
		cancel()
		t.Logf("%s: %+v\n%s%s", spec, o, out.String(), errb.String())
		if o.Exit != 0 || !strings.Contains(out.String(), "RESULT 14") {
			t.Errorf("%s: graph failed in the sandbox: %+v", spec, o)
		}
	}
}
