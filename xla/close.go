package xla

import (
	"runtime"
	"time"

	"github.com/gomlx/go-xla/pkg/pjrt"
	"github.com/gomlx/gomlx/backends"
	gomlxxla "github.com/gomlx/gomlx/backends/xla"
)

// Close releases backend b like b.Finalize, after the device buffers no longer referenced have
// been freed. go-xla frees a PJRT buffer in a cleanup that the garbage collector runs on its
// own goroutine, and does not wait for those cleanups when it destroys the client: a cleanup
// still running then frees a buffer of a client being destroyed. On xla:cuda that crashed
// `mhalab bench` with a segmentation fault at its very end (once in two runs on an H200).
// Close runs the garbage collector and waits, at most a second, until the count of live
// buffers stops changing, so that the cleanups due have run before the client goes; buffers
// still referenced are freed later, as no-ops on a destroyed client.
func Close(b backends.Backend) {
	closeWith(b, b.Finalize)
}

// closeWith is Close with the finalization given (tests watch the moment it runs).
func closeWith(b backends.Backend, finalize func()) {
	if b == nil {
		return
	}
	if _, isXLA := b.(*gomlxxla.Backend); isXLA { // the pure-Go backend has no PJRT buffers
		drainBufferCleanups(time.Second)
	}
	finalize()
}

// drainBufferCleanups collects garbage twice (a GoMLX tensor's finalizer drops its buffer, a
// later cycle queues the buffer's cleanup) and waits until pjrt.BuffersAlive has held still for
// five polls of a millisecond, or until limit has passed.
func drainBufferCleanups(limit time.Duration) {
	runtime.GC()
	runtime.GC()
	deadline := time.Now().Add(limit)
	last, still := pjrt.BuffersAlive(), 0
	for still < 5 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
		if now := pjrt.BuffersAlive(); now != last {
			last, still = now, 0
			runtime.GC()
			continue
		}
		still++
	}
}
