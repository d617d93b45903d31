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
			if err := c.Start(); err != nil {
				fmt.Fprintf(os.Stderr, "child %d: %v\n", i, err)
				return 3
			}
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
