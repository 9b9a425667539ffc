package explain

import (
	"context"

	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"

	"github.com/kubectl-hpa/kubectl-hpa/metrics"
	"github.com/kubectl-hpa/kubectl-hpa/plugin/cmdutil"
)

// clients are the API clients explain reads through: the cluster's, and the metrics
// source chosen for it.
type clients struct {
	*cmdutil.Clients
	Metrics metrics.Client
	// MetricsSelection says which metrics source was chosen and why.
	MetricsSelection metrics.Selection
	// MetricsErr is why no metrics source could be chosen; Metrics then fails every read
	// with it, so the explanation still shows everything else.
	MetricsErr error
}

// liveClients builds live clients from the kubeconfig flags, and the metrics client
// beside them.
func liveClients(ctx context.Context, o *Options) (*clients, error) {
	live, err := cmdutil.NewClients(o.ConfigFlags)
	if err != nil {
		return nil, err
	}
	c := &clients{Clients: live}
	c.Metrics, c.MetricsSelection, c.MetricsErr = o.newMetrics(ctx, o, live.Config, live.Discovery)
	if c.MetricsErr != nil {
		c.Metrics = cmdutil.UnavailableMetrics{Err: c.MetricsErr}
	}
	return c, nil
}

// metricsFromOptions chooses the metrics source through dc, kubectl's discovery cache
// (~/.kube/cache/discovery): warm, it spares explain the discovery round trip.
func metricsFromOptions(ctx context.Context, o *Options, cfg *rest.Config, dc discovery.DiscoveryInterface) (metrics.Client, metrics.Selection, error) {
	return metrics.NewClient(ctx, o.Metrics, cfg, dc, o.Clock)
}
