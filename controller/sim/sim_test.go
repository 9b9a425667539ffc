package sim

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-hpa/kubectl-hpa/controller/sim/load"
)

// cpuHPA is an HPA on cpu utilization of 200m-request pods.
func cpuHPA(target int32, minR, maxR int32, behavior *autoscalingv2.HorizontalPodAutoscalerBehavior) *autoscalingv2.HorizontalPodAutoscaler {
	return &autoscalingv2.HorizontalPodAutoscaler{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "sim"},
		Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
			ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"},
			MinReplicas:    &minR,
			MaxReplicas:    maxR,
			Metrics: []autoscalingv2.MetricSpec{{
				Type: autoscalingv2.ResourceMetricSourceType,
				Resource: &autoscalingv2.ResourceMetricSource{
					Name:   corev1.ResourceCPU,
					Target: autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: &target},
				},
			}},
			Behavior: behavior,
		},
	}
}

func podSpec(cpu string) corev1.PodSpec {
	return corev1.PodSpec{Containers: []corev1.Container{{
		Name: "app", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}},
	}}}
}

func curve(t *testing.T, csv string) load.Curve {
	t.Helper()
	c, err := load.Parse("load.csv", []byte(csv))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// changes is the step series as "at: current->replicas" for every sync that scaled, at whole
// seconds (syncs drift by the model's SyncDuration, 15 ms each).
func changes(v VariantResult) string {
	var b strings.Builder
	for _, s := range v.Steps {
		if s.Scaled {
			fmt.Fprintf(&b, "%s: %d->%d; ", s.At.Truncate(time.Second), s.Current, s.Replicas)
		}
	}
	return b.String()
}

func TestRunStepSeries(t *testing.T) {
	for _, tc := range []struct {
		name     string
		csv      string
		replicas int32
		duration time.Duration
		want     string
	}{
		{
			name: "a step up scales at the first sync after a scrape window sees it, by the legacy limit max(2x, 4), then again",
			csv:  "time,cpu\n0,150\n60,800\n", replicas: 2, duration: 3 * time.Minute,
			want: "1m15s: 2->4; 1m30s: 4->8; ",
		},
		{
			// The last high recommendation is the 1m0s sync's (its window ends at the step);
			// upstream drops a recommendation once it is older than the window, which it is
			// 20 syncs later (each 15 s plus the 15 ms a reconcile takes).
			name: "a step down waits until the last high recommendation is older than the 300 s downscale window",
			csv:  "time,cpu\n0,800\n60,100\n", replicas: 8, duration: 8 * time.Minute,
			want: "6m0s: 8->1; ",
		},
		{
			name: "a load inside the tolerance band never scales",
			csv:  "time,cpu\n0,200\n60,210\n", replicas: 2, duration: 5 * time.Minute,
			want: "",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := Spec{
				Model:    DefaultModel(),
				Load:     curve(t, tc.csv),
				Workload: Workload{Replicas: tc.replicas, Pod: podSpec("200m")},
				Variants: []Variant{{Name: "as is", HPA: cpuHPA(50, 1, 10, nil)}},
				Duration: tc.duration,
			}
			res, err := Run(context.Background(), s)
			if err != nil {
				t.Fatal(err)
			}
			if got := changes(res.Variants[0]); got != tc.want {
				for _, st := range res.Variants[0].Steps {
					t.Logf("%6s %d->%d pods=%d ready=%d cpu=%v %s", st.At, st.Current, st.Replicas, st.Pods, st.Ready, st.Metrics, st.Constraint)
				}
				t.Errorf("scale changes %q, want %q", got, tc.want)
			}
		})
	}
}
