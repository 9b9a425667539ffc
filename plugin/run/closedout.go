package run

import (
	"errors"
	"io"
	"os"
	"os/signal"
	"sync"
	"syscall"
)

// errOutputClosed is why run stops when the reader of its output has gone.
var errOutputClosed = errors.New("the reader of run's output has gone (broken pipe)")

// closedOutput passes writes to w and calls onClosed, once, when a write finds the reader
// gone (EPIPE): run's output piped to tee or head, whose reader exits first or is stopped by
// the same Ctrl-C.
type closedOutput struct {
	w        io.Writer
	once     sync.Once
	onClosed func()
}

func (c *closedOutput) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	if errors.Is(err, syscall.EPIPE) {
		c.once.Do(c.onClosed)
	}
	return n, err
}

// survivePipeClose makes a write to a closed pipe fail with EPIPE instead of ending the
// process by SIGPIPE, which Go does for standard output and error unless SIGPIPE is
// notified: run must live to finish its writes in flight and release its Lease. It stays in
// place until the process exits, since the last lines (the final table, an error) may meet
// the closed pipe too.
func survivePipeClose() {
	signal.Notify(make(chan os.Signal, 1), syscall.SIGPIPE)
}
