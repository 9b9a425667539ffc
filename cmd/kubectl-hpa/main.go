// Command kubectl-hpa is the kubectl plugin "kubectl hpa".
package main

import (
	"context"
	goflag "flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/kubectl-hpa/kubectl-hpa/plugin"
)

// stopDeadline bounds the time from Ctrl-C or SIGTERM to the exit. run promises an exit within
// 2s; its own stop steps fit well inside (a write in flight gets 1s, releasing the Lease
// 0.5s, informers 0.3s), and this is the backstop should one of them hang anyway.
const stopDeadline = 1900 * time.Millisecond

// exitStopTimedOut is the exit code when the stop deadline cut a stop short.
const exitStopTimedOut = 1

func main() {
	// klog keeps its settings in package state; main is the one place that owns it.
	logFlags := goflag.NewFlagSet("klog", goflag.ContinueOnError)
	klog.InitFlags(logFlags)
	// client-go's error handlers are package state too.
	utilruntime.ErrorHandlers = quietDiscovery(utilruntime.ErrorHandlers)
	ctx, release := notifyStop(context.Background(), clock.RealClock{}, stopDeadline, os.Stderr, func() {
		klog.Flush()
		os.Exit(exitStopTimedOut)
	})
	ctx = klog.NewContext(ctx, klog.Background())
	streams := genericiooptions.IOStreams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr}
	code := plugin.Execute(ctx, streams, os.Args[1:], logFlags)
	release()
	klog.Flush()
	os.Exit(code)
}

// discoveryMessages are what client-go's discovery cache logs when discovery fails, a
// failure every command reports itself: in its one-line error, or, for an API a metric needs,
// in the decision's conditions.
var discoveryMessages = map[string]bool{
	"Couldn't get current server API group list": true,
	"Couldn't get resource list":                 true,
}

// quietDiscovery passes every error to handlers but discovery's, which it passes only at -v=2
// and above, so that an unreachable server is one line.
func quietDiscovery(handlers []utilruntime.ErrorHandler) []utilruntime.ErrorHandler {
	return []utilruntime.ErrorHandler{func(ctx context.Context, err error, msg string, keysAndValues ...any) {
		if discoveryMessages[msg] && !klog.FromContext(ctx).V(2).Enabled() {
			return
		}
		for _, h := range handlers {
			h(ctx, err, msg, keysAndValues...)
		}
	}}
}

// interruptGrace is how long after the first stop signal a SIGINT counts as a second,
// deliberate Ctrl-C. A signal repeated at once is the same stop delivered twice (a shell or a
// supervisor signals the process group and the PID; a wrapper forwards the terminal's
// Ctrl-C that reached the plugin too) and must not cut the stop short.
const interruptGrace = 500 * time.Millisecond

// notifyStop returns a context cancelled by the first SIGINT or SIGTERM. From then on a SIGINT
// at least interruptGrace after the first signal ends the process at once (by SIGINT, as an
// unhandled Ctrl-C does); other repeats are ignored. If release has not been called within
// deadline of the first signal, a line saying so is written to errOut and forceExit is
// called. release stops all of this and must be called once the command has returned.
func notifyStop(parent context.Context, clk clock.Clock, deadline time.Duration, errOut io.Writer, forceExit func()) (context.Context, func()) {
	ctx, cancel := context.WithCancel(parent)
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	released, watched := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(watched)
		var first time.Time
		var expired <-chan time.Time
		for {
			select {
			case <-released:
				return
			case s := <-sigs:
				switch {
				case first.IsZero():
					first, expired = clk.Now(), clk.After(deadline)
					cancel()
				case s == os.Interrupt && clk.Since(first) >= interruptGrace:
					signal.Reset(os.Interrupt)
					// os.Process.Signal, not syscall.Kill: the release builds for Windows too
					// (where it fails, and forceExit below ends the process).
					if self, err := os.FindProcess(os.Getpid()); err == nil {
						_ = self.Signal(os.Interrupt)
					}
					// SIGINT was ignored when the process started (a background job):
					// end anyway, as asked.
					clk.Sleep(100 * time.Millisecond)
					forceExit()
				}
			case <-expired:
				fmt.Fprintf(errOut, "error: still stopping %v after the signal; exiting without waiting further (an unreleased Lease expires on its own)\n", deadline)
				forceExit()
			}
		}
	}()
	return ctx, func() {
		close(released)
		<-watched
		signal.Stop(sigs)
		cancel()
	}
}
