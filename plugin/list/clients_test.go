package list

import (
	"context"
	"testing"

	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/kubectl-hpa/kubectl-hpa/internal/cmdtest"
)

// TestClientsAreNotThrottledByClientGo: list sends a handful of lists per namespace, a few
// namespaces at a time; client-go's default of 5 requests a second per client held 100
// namespaces' 401 requests for 38 s (make soak-list). Its clients have no client-side limit,
// the API server's priority and fairness still applies.
func TestClientsAreNotThrottledByClientGo(t *testing.T) {
	flags := genericclioptions.NewConfigFlags(true)
	flags.KubeConfig = ptr.To(cmdtest.Kubeconfig(t))
	o := NewOptions(flags, genericiooptions.NewTestIOStreamsDiscard())
	o.Clock = clocktesting.NewFakeClock(now)
	c, err := liveClients(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if c.Config.QPS >= 0 || c.Config.RateLimiter != nil {
		t.Errorf("list's REST config has QPS %v (rate limiter %v): client-go limits it", c.Config.QPS, c.Config.RateLimiter)
	}
}
