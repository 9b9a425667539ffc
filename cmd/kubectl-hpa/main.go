// Command kubectl-hpa is the kubectl plugin "kubectl hpa".
package main

import (
	"context"
	goflag "flag"
	"os"
	"os/signal"
	"syscall"

	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/klog/v2"

	"github.com/kubectl-hpa/kubectl-hpa/plugin"
)

func main() {
	// klog keeps its settings in package state; main is the one place that owns it.
	logFlags := goflag.NewFlagSet("klog", goflag.ContinueOnError)
	klog.InitFlags(logFlags)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	ctx = klog.NewContext(ctx, klog.Background())
	streams := genericiooptions.IOStreams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr}
	code := plugin.Execute(ctx, streams, os.Args[1:], logFlags)
	klog.Flush()
	stop()
	os.Exit(code)
}
