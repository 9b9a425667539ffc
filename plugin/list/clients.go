package list

import (
	"context"

	"k8s.io/client-go/rest"

	"github.com/kubectl-hpa/kubectl-hpa/controller/evaluation"
	"github.com/kubectl-hpa/kubectl-hpa/metrics"
	"github.com/kubectl-hpa/kubectl-hpa/plugin/cmdutil"
)

// clients are the API clients list reads through: the cluster's, and the metrics source
// chosen for it (a metrics.NamespaceLister reads resource metrics once per namespace).
type clients struct {
	*cmdutil.Clients
	Metrics evaluation.MetricsReader
	// MetricsSelection says which metrics source was chosen and why.
	MetricsSelection metrics.Selection
}

// liveClients builds live clients from the kubeconfig flags, and the metrics client beside
// them; without a metrics source every metric read fails with why, row by row.
func liveClients(ctx context.Context, o *Options) (*clients, error) {
	// list bounds its own concurrency (parallelNamespaces namespaces at a time, a handful of
	// lists each); client-go's default of 5 requests a second per client would hold 100
	// namespaces' 401 requests for 40 s. The API server's priority and fairness still applies.
	wrap := o.ConfigFlags.WrapConfigFn
	o.ConfigFlags.WrapConfigFn = func(c *rest.Config) *rest.Config {
		if wrap != nil {
			c = wrap(c)
		}
		c.QPS = -1
		return c
	}
	live, err := cmdutil.NewClients(o.ConfigFlags)
	if err != nil {
		return nil, err
	}
	c := &clients{Clients: live}
	m, sel, err := metrics.NewClient(ctx, o.Metrics, live.Config, live.Discovery, o.Clock)
	c.Metrics, c.MetricsSelection = m, sel
	if err != nil {
		// Each row's metrics then fail with it (Blind), the rest of the row still shown.
		c.Metrics = cmdutil.UnavailableMetrics{Err: err}
	}
	return c, nil
}

// metricsSource says where numbers came from and why that source was chosen.
func (c *clients) metricsSource() string {
	if sel := c.MetricsSelection; sel.Detail != "" {
		return sel.String()
	}
	return c.Metrics.Source()
}
