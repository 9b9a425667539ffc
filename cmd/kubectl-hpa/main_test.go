package main

import (
	"bytes"
	"context"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	testingclock "k8s.io/utils/clock/testing"
)

// lockedBuffer is an io.Writer safe for the watch goroutine and the test.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func TestNotifyStop(t *testing.T) {
	const deadline = 1900 * time.Millisecond
	cases := []struct {
		name string
		// signal is sent to this process, or nothing when zero.
		signal syscall.Signal
		// stepClock lets deadline pass after the signal.
		stepClock     bool
		wantForceExit bool
	}{
		{name: "SIGINT stops the command and a stop that ends in time is not cut short", signal: syscall.SIGINT},
		{name: "SIGTERM stops the command too", signal: syscall.SIGTERM},
		{name: "a stop still running at the deadline ends the process, saying why", signal: syscall.SIGTERM, stepClock: true, wantForceExit: true},
		{name: "without a signal nothing is watched"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			clk := testingclock.NewFakeClock(time.Now())
			var errOut lockedBuffer
			forced := make(chan struct{})
			ctx, release := notifyStop(context.Background(), clk, deadline, &errOut, func() { close(forced) })
			if tc.signal != 0 {
				if err := syscall.Kill(os.Getpid(), tc.signal); err != nil {
					t.Fatal(err)
				}
				<-ctx.Done()
				// The deadline starts with the signal.
				for !clk.HasWaiters() {
					time.Sleep(time.Millisecond)
				}
			}
			if tc.stepClock {
				clk.Step(deadline)
				<-forced
			}
			release()
			if ctx.Err() == nil {
				t.Error("context not cancelled after release")
			}
			select {
			case <-forced:
				if !tc.wantForceExit {
					t.Error("forceExit called, want the stop to end on its own")
				}
			default:
				if tc.wantForceExit {
					t.Error("forceExit not called")
				}
			}
			if got := errOut.String(); tc.wantForceExit != strings.Contains(got, "still stopping 1.9s after the signal") {
				t.Errorf("error output %q, want a line about the deadline: %v", got, tc.wantForceExit)
			}
			if tc.signal == 0 && clk.HasWaiters() {
				t.Error("a deadline is running although no signal came")
			}
		})
	}
}
