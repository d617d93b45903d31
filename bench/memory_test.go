package bench

import "testing"

// TestChildFailure: a memory measurement whose child process died reports the Go runtime's
// reason (the first lines below are those of go's block gradient at L 16384 under ulimit -v,
// before the key chunks of flashrows.go), not the last lines of its goroutine stacks: the bench
// reported "exit status 2: …/runtime/asm_amd64.s:1771 +0x1 fp=0x11a1b4c517e8 …" before.
func TestChildFailure(t *testing.T) {
	oom := "runtime: out of memory: cannot allocate 4194304-byte block (683114496 in use)\nfatal error: out of memory\n\nruntime stack:\nruntime.throw({0x1, 0x2})\n" +
		"goroutine 5 gp=0x1 m=nil [GC worker (idle)]:\nruntime.gopark(0x0)\n" +
		"\t/usr/local/go/src/runtime/asm_amd64.s:1771 +0x1 fp=0x11a1b4c517e8 sp=0x11a1b4c517e0 pc=0x492a61\n" +
		"created by runtime.gcBgMarkStartWorkers in goroutine 1\n\t/usr/local/go/src/runtime/mgc.go:1695 +0x105\n"
	for _, c := range []struct{ stderr, want string }{
		{oom, "runtime: out of memory: cannot allocate 4194304-byte block (683114496 in use) | fatal error: out of memory"},
		{"panic: mhalib: bad shape\n\ngoroutine 1 [running]:\nmain.main()\n", "panic: mhalib: bad shape"},
		{"one\ntwo\nthree\nfour\n", "two | three | four"},
	} {
		if got := childFailure(c.stderr); got != c.want {
			t.Errorf("childFailure(%q) = %q, want %q", c.stderr[:min(40, len(c.stderr))], got, c.want)
		}
	}
}
