package replicas_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	autoscalingv2 "k8s.io/api/autoscaling/v2"

	"github.com/kubectl-hpa/kubectl-hpa/controller/replicas"
	"github.com/kubectl-hpa/kubectl-hpa/internal/testbuild"
)

func TestSettleKeepsTheScaleEventOnlyForAPersistedSuccessfulRescale(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	withBehavior := func(h *autoscalingv2.HorizontalPodAutoscaler) {
		h.Spec.Behavior = &autoscalingv2.HorizontalPodAutoscalerBehavior{}
	}
	in := replicas.Input{HPA: testbuild.HPA("default", "web", testbuild.Target("apps/v1", "Deployment", "web"), testbuild.Min(1), testbuild.Max(10), testbuild.Metrics(testbuild.CPUUtilization(50)), withBehavior), Now: now, Config: replicas.DefaultConfig()}
	decided := replicas.History{Recommendations: []replicas.Recommendation{{Replicas: 4, Timestamp: now}}}
	rescale := replicas.Decision{Rescale: true, CurrentReplicas: 2, DesiredReplicas: 4, History: decided}
	withScaleUp := replicas.History{
		Recommendations: decided.Recommendations,
		ScaleUpEvents:   []replicas.ScaleEvent{{ReplicaChange: 2, Timestamp: now}},
	}
	for _, tc := range []struct {
		name      string
		d         replicas.Decision
		scaleErr  error
		persisted bool
		want      replicas.History
	}{
		{name: "a persisted rescale adds its scale event", d: rescale, persisted: true, want: withScaleUp},
		{name: "a dry-run rescale keeps the decision's history", d: rescale, persisted: false, want: decided},
		{name: "a failed scale write keeps the decision's history", d: rescale, scaleErr: errors.New("conflict"), persisted: true, want: decided},
		{name: "no rescale keeps the decision's history", d: replicas.Decision{CurrentReplicas: 2, DesiredReplicas: 2, History: decided}, persisted: true, want: decided},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, kept := replicas.Settle(in, tc.d, tc.scaleErr, tc.persisted)
			if diff := cmp.Diff(tc.want, kept); diff != "" {
				t.Errorf("kept history (-want +got):\n%s", diff)
			}
			sameMessage := cmp.Comparer(func(a, b error) bool { return fmt.Sprint(a) == fmt.Sprint(b) })
			if diff := cmp.Diff(replicas.Apply(in, tc.d, tc.scaleErr), out, sameMessage); diff != "" {
				t.Errorf("outcome differs from replicas.Apply (-want +got):\n%s", diff)
			}
		})
	}
}
