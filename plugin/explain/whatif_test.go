package explain

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/kubectl-hpa/kubectl-hpa/controller/replicas"
	"github.com/kubectl-hpa/kubectl-hpa/metrics/sampleset"
	"github.com/kubectl-hpa/kubectl-hpa/plugin/output"
)

// TestAssumedPercentIsOfTheRequestTheCoreDividesBy: --assume cpu=90% yields 90% utilization
// whatever makes up the pods' requests (the core's denominator: pod-level requests plus
// overhead, sidecars), not only for plain container requests.
func TestAssumedPercentIsOfTheRequestTheCoreDividesBy(t *testing.T) {
	always := corev1.ContainerRestartPolicyAlways
	cpu := func(v string) corev1.ResourceList {
		return corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(v)}
	}
	tests := []struct {
		name string
		pod  func(p *corev1.Pod)
	}{
		{"container requests", func(*corev1.Pod) {}},
		{"a sidecar's request", func(p *corev1.Pod) {
			p.Spec.InitContainers = []corev1.Container{{Name: "proxy", RestartPolicy: &always, Resources: corev1.ResourceRequirements{Requests: cpu("300m")}}}
		}},
		{"pod-level requests and overhead", func(p *corev1.Pod) {
			p.Spec.Resources = &corev1.ResourceRequirements{Requests: cpu("700m")}
			p.Spec.Overhead = cpu("100m")
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture()
			for _, p := range f.Pods {
				tt.pod(p)
			}
			in := replicas.Input{
				HPA: f.HPA, Pods: f.Pods, Now: now, Config: replicas.DefaultConfig(),
				Scale:   &replicas.Scale{SpecReplicas: 4, StatusReplicas: 4, Selector: "app=web"},
				Metrics: []replicas.MetricData{{PodSamples: sampleset.New(0)}},
			}
			wis, err := parseWhatIfs(nil, []string{"cpu=90%"})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := applyAssumes(&in, wis, nil); err != nil {
				t.Fatal(err)
			}
			d := replicas.Decide(in)
			if len(d.Metrics) != 1 || d.Metrics[0].Err != nil {
				t.Fatalf("metric not computed: %+v", d.Metrics)
			}
			got := d.Metrics[0].Status.Resource.Current.AverageUtilization
			if got == nil || *got != 90 {
				t.Errorf("utilization = %s, want 90", output.FormatCurrent(f.HPA.Spec.Metrics[0], d.Metrics[0]))
			}
		})
	}
}
