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

// notifyStop returns a context cancelled by the first SIGINT or SIGTERM. From then on a second
// signal has its default effect (the process ends at once), and if release has not been
// called within deadline, a line saying so is written to errOut and forceExit is called.
// release stops all of this and must be called once the command has returned.
func notifyStop(parent context.Context, clk clock.Clock, deadline time.Duration, errOut io.Writer, forceExit func()) (context.Context, func()) {
	ctx, stopSignals := signal.NotifyContext(parent, os.Interrupt, syscall.SIGTERM)
	released := make(chan struct{})
	stopWatch := context.AfterFunc(ctx, func() {
		stopSignals()
		select {
		case <-released:
		case <-clk.After(deadline):
			fmt.Fprintf(errOut, "error: still stopping %v after the signal; exiting without waiting further (an unreleased Lease expires on its own)\n", deadline)
			forceExit()
		}
	})
	return ctx, func() {
		stopWatch()
		close(released)
		stopSignals()
	}
}
