package replicas

import (
	"errors"
	"testing"

	autoscalingv2 "k8s.io/api/autoscaling/v2"

	"github.com/kubectl-hpa/kubectl-hpa/internal/testbuild"
)

// A metric's fetch error keeps the client's error in its chain, whatever upstream's words
// around it: the commands tell a metrics source that failed from a metric that cannot be
// computed by it (errors.As), and the message stays upstream's.
func TestAFailedFetchKeepsTheClientsErrorForEveryMetricType(t *testing.T) {
	sentinel := errors.New("the server is currently unable to handle the request")
	for _, spec := range []autoscalingv2.MetricSpec{
		testbuild.CPUUtilization(50),
		testbuild.PodsAverage("qps", 10),
		testbuild.ObjectValue(testDeployment, "qps", 10),
		testbuild.ExternalValue("qps", testExternalSelector, 10),
		testbuild.ExternalAverage("qps", testExternalSelector, 10),
	} {
		t.Run(string(spec.Type), func(t *testing.T) {
			in := input(hpa(testbuild.Max(6), testbuild.Metrics(spec)), 3, withPods(hzPods(3, 1000, nil)...), withData(MetricData{Err: sentinel}))
			d := Decide(in)
			if len(d.Metrics) != 1 || d.Metrics[0].Err == nil {
				t.Fatalf("metrics %+v, want one that failed", d.Metrics)
			}
			if !errors.Is(d.Metrics[0].Err, sentinel) {
				t.Errorf("the metric's error %q does not wrap the client's", d.Metrics[0].Err)
			}
		})
	}
}
