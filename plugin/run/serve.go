package run

import (
	"context"
	"errors"
	"net"
	"net/http"
	"time"

	"k8s.io/klog/v2"

	"github.com/kubectl-hpa/kubectl-hpa/plugin/cmdutil"
)

// serveMetrics serves h on addr until stop is called or ctx ends; bound is the address it
// listens on (the port chosen when addr's is 0).
func serveMetrics(ctx context.Context, addr string, h http.Handler) (stop func(), bound string, err error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, "", cmdutil.UsageErrorf("--metrics-bind-address %s: %w", addr, err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			klog.FromContext(ctx).Error(err, "Metrics server stopped", "address", addr)
		}
	}()
	return func() {
		// Scrapes are short; do not let one hold up the exit.
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 200*time.Millisecond)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}, ln.Addr().String(), nil
}
