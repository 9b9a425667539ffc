package list

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/kubectl-hpa/kubectl-hpa/internal/testbuild"
	"github.com/kubectl-hpa/kubectl-hpa/plugin/api/v1alpha1"
)

// TestEachSituationHasItsBindingAndProblem holds the BINDING and the first PROBLEMS ID of the
// situations the unit fixture does not show to what upstream's controller would do: each
// namespace has one situation beside a healthy HPA.
func TestEachSituationHasItsBindingAndProblem(t *testing.T) {
	tests := []struct {
		name string
		// add puts the situation's objects into namespace "s"; its HPA is "web".
		add  func(c *cluster)
		want map[string]string // HPA name -> "BINDING PROBLEM" (the first finding, or <none>)
	}{{
		name: "pods without a cpu request under a Utilization target cannot compute, they are not blind",
		add: func(c *cluster) {
			c.app("s", "web", 2, "300m", hpa("s", "web", "web", 60, 10, 2, 2))
			for _, obj := range c.objects {
				if p, ok := obj.(*corev1.Pod); ok && p.Namespace == "s" {
					p.Spec.Containers[0].Resources = corev1.ResourceRequirements{}
				}
			}
		},
		want: map[string]string{"web": "MetricsUnavailable CannotCompute"},
	}, {
		name: "a cpu metric asking for a scale-down that a failing second metric blocks is MetricFailing, not Blind",
		add: func(c *cluster) {
			// cpu at 20% of 60% asks for 1; the custom metrics API has no qps for the pods.
			c.app("s", "web", 2, "100m", hpa("s", "web", "web", 60, 10, 2, 2, testbuild.Metrics(testbuild.PodsAverage("qps", 10000))))
		},
		want: map[string]string{"web": "MetricsUnavailable MetricFailing"},
	}, {
		name: "two HPAs on one Deployment: upstream decides neither (AmbiguousSelector)",
		add: func(c *cluster) {
			c.app("s", "web", 2, "450m", hpa("s", "web", "web", 60, 10, 2, 2))
			c.objects = append(c.objects, hpa("s", "web-2", "web", 60, 10, 2, 2))
		},
		want: map[string]string{"web": "Selector AmbiguousSelector", "web-2": "Selector AmbiguousSelector"},
	}, {
		name: "an HPA whose pods no other HPA selects is decided",
		add: func(c *cluster) {
			c.app("s", "web", 2, "450m", hpa("s", "web", "web", 60, 10, 2, 2))
			c.app("s", "api", 2, "450m", hpa("s", "api", "api", 60, 10, 2, 2))
		},
		want: map[string]string{"web": "None DisagreesWithCluster", "api": "None DisagreesWithCluster"},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := &cluster{}
			tc.add(c)
			c.rescale("s", "web", 2, time.Hour)
			r := run(t, c.build(t), "-n", "s", "-o", "json")
			if r.code != 0 {
				t.Fatalf("exit %d, stderr %q", r.code, r.stderr)
			}
			var list v1alpha1.List
			if err := json.Unmarshal([]byte(r.stdout), &list); err != nil {
				t.Fatalf("%v\n%s", err, r.stdout)
			}
			got := map[string]string{}
			for _, item := range list.Items {
				got[item.Metadata.Name] = fmt.Sprintf("%s %s", item.Verdict.Constraint, firstProblem(t, c, item.Metadata.Name))
			}
			for name, want := range tc.want {
				if got[name] != want {
					t.Errorf("%s: BINDING and first problem %q, want %q", name, got[name], want)
				}
			}
		})
	}
}

// firstProblem is the first PROBLEMS ID of HPA name in the text table of namespace s.
func firstProblem(t *testing.T, c *cluster, name string) string {
	t.Helper()
	r := run(t, c.build(t), "-n", "s", name)
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	if len(lines) != 2 {
		t.Fatalf("list -n s %s printed:\n%s", name, r.stdout)
	}
	cells := regexp.MustCompile(`\s{2,}`).Split(lines[1], -1)
	first, _, _ := strings.Cut(cells[len(cells)-1], ",")
	return first
}
