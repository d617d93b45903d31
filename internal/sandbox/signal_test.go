package sandbox

import (
	"os"
	"os/signal"
	"syscall"
)

func signalNotify(c chan os.Signal) { signal.Notify(c, syscall.SIGUSR1) }
func signalStop(c chan os.Signal)   { signal.Stop(c) }
