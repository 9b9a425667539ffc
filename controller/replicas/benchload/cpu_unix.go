//go:build unix

package benchload

import (
	"syscall"
	"time"
)

// ProcessCPU is the CPU time (user and system, every thread, the garbage collector's included)
// the process has used so far. Per operation it is a figure that a loaded machine does not
// inflate as much as wall time, since time spent waiting for a core is not counted.
func ProcessCPU() (time.Duration, bool) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, false
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), true
}
